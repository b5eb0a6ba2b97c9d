-- UNKNOWN_TOOL calls: tool names the server does not have, usually
-- hallucinated or stale names a model took from an old tool list. The tool
-- filter does not apply, since these names are not real tools.
--
-- A re-ingested call counts once, as its latest ingest, without FINAL: only
-- a call with an UNKNOWN_TOOL copy can be one, so those calls are found
-- first, and each, grouped by its identity (the sort key), counts when its
-- latest copy (largest ingested_ms) is UNKNOWN_TOOL (see
-- invalid_argument_top_args.sql; docs/dashboards.md).
SELECT
  server_name,
  requested_tool,
  count() AS calls_n,
  uniqExact(session_) AS sessions_n,
  max(ts_) AS last_seen
FROM (
  SELECT server_name, requested_tool, session_, l.1 AS ts_
  FROM (
    SELECT
      CAST(server AS String) AS server_name,
      CAST(tool AS String) AS requested_tool,
      session_key AS session_,
      argMax((ts, CAST(category AS String)), ingested_ms) AS l
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
    GROUP BY tenant, server, tool, session_key, ts_ms, call_id
  )
  WHERE l.2 = 'UNKNOWN_TOOL'
)
GROUP BY server_name, requested_tool
ORDER BY calls_n DESC, server_name, requested_tool
LIMIT 100
