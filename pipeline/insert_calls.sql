-- Inserts Call rows; the column order is Call.Values (pipeline/call.go).
INSERT INTO calls (ts, ts_ms, duration_ms, tenant, server, tool, session_id, session_key,
  trace_id, request_id, call_id, client, protocol_version, source, side,
  args_json, args_hash, arg_keys, arg_values,
  has_response, is_error, rpc_error, rpc_code, rpc_message, result_type,
  content_blocks, text_bytes, has_structured, message,
  category, is_failure, declared_retryable, expected_retryable, class_source,
  class_rule, error_code, misflagged, retry_after_ms, continuation, args_validated,
  taxonomy_version, ingested_ms)
