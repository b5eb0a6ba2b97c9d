-- UNKNOWN_TOOL calls per bucket of the panel interval (at least 5 minutes),
-- by server. From the rollup calls_5m, each call counted once
-- (docs/dashboards.md).
SELECT
  toDateTime(intDiv(toUInt32(bucket), $__interval_s) * $__interval_s) AS time,
  toString(server) AS server_name,
  uniqExactMerge(calls) AS unknown_tool_n
FROM calls_5m
WHERE $__timeFilter(bucket)
  AND category = 'UNKNOWN_TOOL'
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
GROUP BY time, server_name
ORDER BY time, server_name
