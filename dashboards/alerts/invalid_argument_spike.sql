-- Alert MCPInvalidArgumentSpike: per tenant, server and tool, how many times
-- the INVALID_ARGUMENT share of the last hour exceeds the tool's share over
-- the 7 days before it (queries/invalid_argument_spikes.sql, same test).
-- Only tools with at least 20 calls and a share of at least 5 % in the last
-- hour are returned. The ratio is computed from integer products, so that a
-- share of exactly 3 times the baseline gives exactly 3; a tool without
-- INVALID_ARGUMENT calls in the baseline compares with 0 and gets the cap,
-- 1000. The rule's range is 7 days and 1 hour, ending now.
SELECT
  tenant_name,
  server_name,
  tool_name,
  if(base_invalid = 0, toFloat64(1000), least(toFloat64(1000), (invalid_n * base_calls) / (base_invalid * calls_n))) AS spike_ratio
FROM (
  SELECT
    toString(tenant) AS tenant_name,
    toString(server) AS server_name,
    toString(tool) AS tool_name,
    countIf(ts > $__toTime - 3600) AS calls_n,
    countIf(ts > $__toTime - 3600 AND category = 'INVALID_ARGUMENT') AS invalid_n,
    countIf(ts <= $__toTime - 3600) AS base_calls,
    countIf(ts <= $__toTime - 3600 AND category = 'INVALID_ARGUMENT') AS base_invalid
  FROM calls FINAL
  WHERE $__timeFilter(ts)
  GROUP BY tenant_name, server_name, tool_name
)
WHERE calls_n >= 20 AND invalid_n * 20 >= calls_n
ORDER BY tenant_name, server_name, tool_name
