-- Feeds calls_5m_classes from every insert into calls. Like calls_5m_mv it
-- sees new inserts only: calls inserted before this migration ran are not in
-- the rollup until they are copied in with the backfill statement of
-- docs/dashboards.md (idempotent: the states hold distinct call ids).
CREATE MATERIALIZED VIEW IF NOT EXISTS calls_5m_classes_mv TO calls_5m_classes AS
SELECT
  toDateTime(intDiv(toUInt32(ts), 300) * 300, 'UTC') AS bucket,
  tenant,
  server,
  tool,
  category,
  is_failure,
  misflagged,
  if(is_failure = 1, multiIf(rpc_error = 1, toString(rpc_code), error_code != '', error_code, has_response = 0, 'no_response', 'tool_error'), '') AS code,
  uniqExactState(call_id) AS calls
FROM calls
GROUP BY bucket, tenant, server, tool, category, is_failure, misflagged, code
