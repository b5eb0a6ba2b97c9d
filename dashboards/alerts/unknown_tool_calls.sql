-- Alert MCPUnknownToolCalls: per tenant, server and requested tool name, the
-- calls in the rule's range (the last hour) whose latest ingest is
-- UNKNOWN_TOOL: a name the server does not have, from a client's stale tool
-- list or a model's invention, which the seed article's table says to stop
-- and report as a configuration error, not to retry. Only names with at
-- least one such call are returned.
-- A re-ingested call counts once, as its latest ingest, without FINAL: only
-- a call with an UNKNOWN_TOOL copy can be one, so those calls are found
-- first, and each, grouped by its identity (the sort key), counts when its
-- latest copy (largest ingested_ms) is UNKNOWN_TOOL (as the Unknown tool
-- names panel, panels/unknown_tools.sql).
SELECT
  tenant_name,
  server_name,
  tool_name,
  count() AS unknown_n
FROM (
  SELECT
    toString(tenant) AS tenant_name,
    toString(server) AS server_name,
    toString(tool) AS tool_name,
    argMax(CAST(category AS String), ingested_ms) AS l
  FROM calls
  WHERE $__timeFilter(ts)
    AND call_id GLOBAL IN (
      SELECT call_id
      FROM calls
      WHERE $__timeFilter(ts)
        AND category = 'UNKNOWN_TOOL')
  GROUP BY tenant, server, tool, session_key, ts_ms, call_id
)
WHERE l = 'UNKNOWN_TOOL'
GROUP BY tenant_name, server_name, tool_name
ORDER BY tenant_name, server_name, tool_name
