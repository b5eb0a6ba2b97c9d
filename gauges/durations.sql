-- Durations of the calls ingested in (@after_ms, @until_ms] (ingested_ms,
-- the ingest time), per tenant, server, tool and OTel error.type, as counts
-- at or below each bucket bound of mcp.server.operation.duration (the OTel
-- MCP semantic conventions' bounds, 0.01 s to 300 s, here in milliseconds),
-- with the count and the sum. Calls without a known duration (-1) are left
-- out. Not FINAL: each ingested row is counted once, when it arrives.
-- error.type is the JSON-RPC code for protocol errors, tool_error for isError
-- results, timeout for calls without an answer, and empty for successes.
-- @since_s bounds ts so that the daily partitions prune; calls whose request
-- time lies further back are not counted.
SELECT
  CAST(tenant AS String) AS tenant_name,
  CAST(server AS String) AS server_name,
  CAST(tool AS String) AS tool_name,
  multiIf(rpc_error = 1, toString(rpc_code), has_response = 0, 'timeout', is_error = 1, 'tool_error', '') AS error_type,
  count() AS calls_n,
  sum(duration_ms) AS duration_ms_sum,
  [countIf(duration_ms <= 10), countIf(duration_ms <= 20), countIf(duration_ms <= 50),
   countIf(duration_ms <= 100), countIf(duration_ms <= 200), countIf(duration_ms <= 500),
   countIf(duration_ms <= 1000), countIf(duration_ms <= 2000), countIf(duration_ms <= 5000),
   countIf(duration_ms <= 10000), countIf(duration_ms <= 30000), countIf(duration_ms <= 60000),
   countIf(duration_ms <= 120000), countIf(duration_ms <= 300000)] AS le_counts
FROM calls
WHERE ts >= toDateTime(@since_s, 'UTC')
  AND ingested_ms > @after_ms AND ingested_ms <= @until_ms
  AND duration_ms >= 0
GROUP BY tenant_name, server_name, tool_name, error_type
ORDER BY calls_n DESC, tenant_name, server_name, tool_name, error_type
