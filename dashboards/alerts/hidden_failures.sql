-- Alert MCPHiddenFailures: per tenant, server and tool, the calls in the
-- rule's range (the last hour) that failed but were sent with isError false
-- or absent (misflagged failures): clients take them for successes. Only
-- tools with at least one are returned.
-- A re-ingested call counts once, as its latest ingest, without FINAL: every
-- row's count minus those of the copies a later ingest replaced
-- (queries/overview.sql), so a call reclassified since counts where
-- its latest ingest puts it.
SELECT
  tenant_name,
  server_name,
  tool_name,
  hidden_n
FROM (
  SELECT
    tenant_name,
    server_name,
    tool_name,
    toUInt64(sum(h_)) AS hidden_n
  FROM (
    SELECT
      toString(tenant) AS tenant_name,
      toString(server) AS server_name,
      toString(tool) AS tool_name,
      toInt64(countIf(misflagged = 1 AND is_failure = 1)) AS h_
    FROM calls
    WHERE $__timeFilter(ts)
    GROUP BY tenant_name, server_name, tool_name
    UNION ALL
    SELECT tenant_name, server_name, tool_name, -toInt64(s.2 = 1 AND s.3 = 1)
    FROM (
      SELECT
        toString(tenant) AS tenant_name,
        toString(server) AS server_name,
        toString(tool) AS tool_name,
        arrayPopFront(arraySort(x -> -x.1, groupArray((ingested_ms, misflagged, is_failure)))) AS stale
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
  GROUP BY tenant_name, server_name, tool_name
)
WHERE hidden_n > 0
ORDER BY tenant_name, server_name, tool_name
