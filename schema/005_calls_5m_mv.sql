-- Feeds calls_5m from every insert into calls. It sees new inserts only:
-- rows inserted before this migration ran are not in the rollup (the failure
-- rate endpoint reads the raw table for ranges that start earlier; see
-- docs/analytics.md).
CREATE MATERIALIZED VIEW IF NOT EXISTS calls_5m_mv TO calls_5m AS
SELECT
  toDateTime(intDiv(toUInt32(ts), 300) * 300, 'UTC') AS bucket,
  tenant,
  server,
  tool,
  category,
  rpc_code,
  is_failure,
  uniqExactState(call_id) AS calls
FROM calls
GROUP BY bucket, tenant, server, tool, category, rpc_code, is_failure
