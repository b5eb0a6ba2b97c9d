-- UNKNOWN_TOOL calls per bucket of the panel interval, by server.
SELECT
  toDateTime(intDiv(toUInt32(ts), $__interval_s) * $__interval_s) AS time,
  toString(server) AS server_name,
  count() AS unknown_tool_n
FROM calls FINAL
WHERE $__timeFilter(ts)
  AND category = 'UNKNOWN_TOOL'
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
GROUP BY time, server_name
ORDER BY time, server_name
