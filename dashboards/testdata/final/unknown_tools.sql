-- UNKNOWN_TOOL calls: tool names the server does not have, usually
-- hallucinated or stale names a model took from an old tool list. The tool
-- filter does not apply, since these names are not real tools.
SELECT
  toString(server) AS server_name,
  toString(tool) AS requested_tool,
  count() AS calls_n,
  uniqExact(session_key) AS sessions_n,
  max(ts) AS last_seen
FROM calls FINAL
WHERE $__timeFilter(ts)
  AND category = 'UNKNOWN_TOOL'
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
GROUP BY server_name, requested_tool
ORDER BY calls_n DESC, server_name, requested_tool
LIMIT 100
