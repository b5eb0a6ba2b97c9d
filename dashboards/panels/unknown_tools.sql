-- UNKNOWN_TOOL calls: tool names the server does not have, usually
-- hallucinated or stale names a model took from an old tool list. The tool
-- filter does not apply, since these names are not real tools.
--
-- A re-ingested call counts once, as its latest ingest, without FINAL: the
-- rows of the calls ingested once, plus the latest copy of each call ingested
-- more than once (see failure_messages.sql; docs/dashboards.md), looked for
-- among the calls with a copy in the class.
SELECT
  server_name,
  requested_tool,
  count() AS calls_n,
  uniqExact(session_) AS sessions_n,
  max(ts_) AS last_seen
FROM (
  SELECT CAST(server AS String) AS server_name, CAST(tool AS String) AS requested_tool, session_key AS session_, ts AS ts_
  FROM calls
  WHERE $__timeFilter(ts)
    AND category = 'UNKNOWN_TOOL'
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND call_id GLOBAL NOT IN (
      SELECT call_id
      FROM calls
      WHERE $__timeFilter(ts)
        AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
        AND $__conditionalAll(server IN (${server:singlequote}), $server)
        AND call_id GLOBAL IN (
          SELECT call_id
          FROM calls
          WHERE $__timeFilter(ts)
            AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
            AND $__conditionalAll(server IN (${server:singlequote}), $server)
            AND category = 'UNKNOWN_TOOL')
      GROUP BY call_id
      HAVING count() > 1)
  UNION ALL
  SELECT CAST(server AS String), CAST(tool AS String), session_key, l.1
  FROM (
    SELECT server, tool, session_key, argMax((ts, CAST(category AS String)), ingested_ms) AS l
    FROM calls
    WHERE $__timeFilter(ts)
      AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
      AND $__conditionalAll(server IN (${server:singlequote}), $server)
      AND call_id GLOBAL IN (
        SELECT call_id
        FROM calls
        WHERE $__timeFilter(ts)
          AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
          AND $__conditionalAll(server IN (${server:singlequote}), $server)
          AND call_id GLOBAL IN (
            SELECT call_id
            FROM calls
            WHERE $__timeFilter(ts)
              AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
              AND $__conditionalAll(server IN (${server:singlequote}), $server)
              AND category = 'UNKNOWN_TOOL')
        GROUP BY call_id
        HAVING count() > 1)
    GROUP BY tenant, server, tool, session_key, ts_ms, call_id
  )
  WHERE l.2 = 'UNKNOWN_TOOL'
)
GROUP BY server_name, requested_tool
ORDER BY calls_n DESC, server_name, requested_tool
LIMIT 100
