-- Replays for the scale benchmarks, run after calls.sql: 1 % of the
-- calls ingested a second time, later (ingested_ms 2), as a client resending
-- after a timeout or a re-ingest under new rules would; half of them
-- unchanged, half reclassified (a failure becomes OK, anything else
-- INTERNAL). Every query must count each of these calls once, as its latest
-- ingest.
INSERT INTO calls (ts, ts_ms, duration_ms, tenant, server, tool, session_id, session_key,
  trace_id, request_id, call_id, client, protocol_version, source, side,
  args_json, args_hash, arg_keys, arg_values,
  has_response, is_error, rpc_error, rpc_code, rpc_message, result_type,
  content_blocks, text_bytes, has_structured, message,
  category, is_failure, declared_retryable, expected_retryable, class_source,
  class_rule, error_code, misflagged, retry_after_ms, continuation, args_validated,
  taxonomy_version, ingested_ms)
SELECT
  ts, ts_ms, duration_ms, tenant, server, tool, session_id, session_key,
  trace_id, request_id, call_id, client, protocol_version, source, side,
  args_json, args_hash, arg_keys, arg_values,
  has_response, is_error, rpc_error, rpc_code, rpc_message, result_type,
  content_blocks, text_bytes, has_structured, message,
  if(intDiv(call_id, 100) % 2 = 0, CAST(category AS String), if(is_failure = 1, 'OK', 'INTERNAL')),
  if(intDiv(call_id, 100) % 2 = 0, is_failure, 1 - is_failure),
  declared_retryable, expected_retryable, class_source,
  class_rule, error_code, misflagged, retry_after_ms, continuation, args_validated,
  taxonomy_version, toInt64(2)
FROM calls
WHERE call_id % 100 = 0
