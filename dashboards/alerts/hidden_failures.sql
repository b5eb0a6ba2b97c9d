-- Alert MCPHiddenFailures: per tenant, server and tool, the calls in the
-- rule's range (the last hour) that failed but were sent with isError false
-- or absent (misflagged failures): clients take them for successes. Only
-- tools with at least one are returned.
SELECT
  tenant_name,
  server_name,
  tool_name,
  hidden_n
FROM (
  SELECT
    toString(tenant) AS tenant_name,
    toString(server) AS server_name,
    toString(tool) AS tool_name,
    countIf(misflagged = 1 AND is_failure = 1) AS hidden_n
  FROM calls FINAL
  WHERE $__timeFilter(ts)
  GROUP BY tenant_name, server_name, tool_name
)
WHERE hidden_n > 0
ORDER BY tenant_name, server_name, tool_name
