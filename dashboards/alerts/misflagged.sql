-- Alert MCPMisflagged: per tenant, server, tool and category, the calls in
-- the rule's range (24 hours, the API's default window) whose isError flag
-- contradicts their category, the misflagged kind of
-- queries/misclassifications.sql. Only pairs with at least one are returned;
-- the rule fires at 5, the API's default minimum.
-- A re-ingested call counts once, as its latest ingest, without FINAL: every
-- row's count minus those of the copies a later ingest replaced
-- (queries/overview.sql), so a call reclassified since counts where
-- its latest ingest puts it.
SELECT
  tenant_name,
  server_name,
  tool_name,
  category_name,
  misflagged_n
FROM (
  SELECT
    tenant_name,
    server_name,
    tool_name,
    category_name,
    toUInt64(sum(m_)) AS misflagged_n
  FROM (
    SELECT
      toString(tenant) AS tenant_name,
      toString(server) AS server_name,
      toString(tool) AS tool_name,
      CAST(category AS String) AS category_name,
      toInt64(sum(misflagged)) AS m_
    FROM calls
    WHERE $__timeFilter(ts)
    GROUP BY tenant_name, server_name, tool_name, category_name
    UNION ALL
    SELECT tenant_name, server_name, tool_name, s.2, -toInt64(s.3)
    FROM (
      SELECT
        toString(tenant) AS tenant_name,
        toString(server) AS server_name,
        toString(tool) AS tool_name,
        arrayPopFront(arraySort(x -> -x.1, groupArray((ingested_ms, CAST(category AS String), misflagged)))) AS stale
      FROM calls
      WHERE $__timeFilter(ts)
        AND call_id GLOBAL IN (
          SELECT call_id
          FROM calls
          WHERE $__timeFilter(ts)
          GROUP BY call_id
          HAVING count() > 1)
      GROUP BY tenant, server, tool, session_key, ts_ms, call_id
    )
    ARRAY JOIN stale AS s
  )
  GROUP BY tenant_name, server_name, tool_name, category_name
)
WHERE misflagged_n > 0
ORDER BY tenant_name, server_name, tool_name, category_name
