-- Alert MCPHiddenFailures: per tenant, server and tool, the calls in the
-- rule's range (the last hour) that failed but were sent with isError false
-- or absent (misflagged failures): clients take them for successes. Only
-- tools with at least one are returned.
-- A re-ingested call counts once, as its latest ingest, without FINAL: only
-- a call with a hidden-failure copy can be one, so those calls are found
-- first, and each, grouped by its identity (the sort key), counts when its
-- latest copy (largest ingested_ms) is a misflagged failure; a call
-- reclassified since counts where its latest ingest puts it (as
-- misflagged.sql).
SELECT
  tenant_name,
  server_name,
  tool_name,
  count() AS hidden_n
FROM (
  SELECT
    toString(tenant) AS tenant_name,
    toString(server) AS server_name,
    toString(tool) AS tool_name,
    argMax((misflagged, is_failure), ingested_ms) AS l
  FROM calls
  WHERE $__timeFilter(ts)
    AND call_id GLOBAL IN (
      SELECT call_id
      FROM calls
      WHERE $__timeFilter(ts)
        AND misflagged = 1
        AND is_failure = 1)
  GROUP BY tenant, server, tool, session_key, ts_ms, call_id
)
WHERE l.1 = 1 AND l.2 = 1
GROUP BY tenant_name, server_name, tool_name
ORDER BY tenant_name, server_name, tool_name
