-- Alert MCPMisflagged: per tenant, server, tool and category, the calls in
-- the rule's range (24 hours, the API's default window) whose isError flag
-- contradicts their category, the misflagged kind of
-- queries/misclassifications.sql. Only pairs with at least one are returned;
-- the rule fires at 5, the API's default minimum.
-- A re-ingested call counts once, as its latest ingest, without FINAL: only
-- a call with a misflagged copy can be one, so those calls (a few percent of
-- the range) are found first, and each, grouped by its identity (the sort
-- key), counts under its latest copy's category when that copy (largest
-- ingested_ms) is misflagged; a call reclassified since counts where its
-- latest ingest puts it. Every row's count minus those of the copies a
-- later ingest replaced (queries/overview.sql's method), which hashes every
-- call id of the range, took 2x as long on 18.16 at 10M calls
-- (BENCHMARKS.md, sixteenth round).
SELECT
  tenant_name,
  server_name,
  tool_name,
  l.1 AS category_name,
  count() AS misflagged_n
FROM (
  SELECT
    toString(tenant) AS tenant_name,
    toString(server) AS server_name,
    toString(tool) AS tool_name,
    argMax((CAST(category AS String), misflagged), ingested_ms) AS l
  FROM calls
  WHERE $__timeFilter(ts)
    AND call_id GLOBAL IN (
      SELECT call_id
      FROM calls
      WHERE $__timeFilter(ts)
        AND misflagged = 1)
  GROUP BY tenant, server, tool, session_key, ts_ms, call_id
)
WHERE l.2 = 1
GROUP BY tenant_name, server_name, tool_name, category_name
ORDER BY tenant_name, server_name, tool_name, category_name
