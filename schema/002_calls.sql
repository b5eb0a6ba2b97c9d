-- One row per MCP tools/call. ReplacingMergeTree keyed by the call identity
-- (tenant, server, session key, tool, time, call id): a call ingested twice
-- collapses to one row, and every query reads with FINAL so that it counts once
-- even before the merge. Daily partitions make time filters and retention cheap.
CREATE TABLE IF NOT EXISTS calls (
  ts DateTime('UTC'),
  ts_ms Int64,
  duration_ms Int64,
  tenant LowCardinality(String),
  server LowCardinality(String),
  tool LowCardinality(String),
  session_id String,
  session_key String,
  trace_id String,
  request_id String,
  call_id UInt64,
  client LowCardinality(String),
  protocol_version LowCardinality(String),
  source LowCardinality(String),
  side LowCardinality(String),
  args_json String,
  args_hash UInt64,
  arg_keys Array(String),
  arg_values Array(String),
  has_response UInt8,
  is_error Int8,
  rpc_error UInt8,
  rpc_code Int64,
  rpc_message String,
  result_type LowCardinality(String),
  content_blocks Int32,
  text_bytes Int64,
  has_structured UInt8,
  message String,
  category LowCardinality(String),
  is_failure UInt8,
  declared_retryable Int8,
  expected_retryable Int8,
  class_source LowCardinality(String),
  class_rule LowCardinality(String),
  error_code String,
  misflagged UInt8,
  retry_after_ms Int64,
  continuation UInt8,
  taxonomy_version LowCardinality(String),
  ingested_ms Int64
) ENGINE = ReplacingMergeTree(ingested_ms)
PARTITION BY toYYYYMMDD(ts)
ORDER BY (tenant, server, tool, session_key, ts_ms, call_id)
SETTINGS index_granularity = 8192
