-- The argument key=value pairs most often sent with INVALID_ARGUMENT calls,
-- at most 10 per tool (queries/invalid_argument_top_args.sql without the
-- buckets): the values that a bad schema or a renamed enum makes models send.
--
-- A re-ingested call counts once, as its latest ingest, without FINAL: the
-- rows of the calls ingested once, plus the latest copy of each call ingested
-- more than once (see failure_messages.sql; docs/dashboards.md), looked for
-- among the calls with a copy in the class.
SELECT
  tool_name,
  k AS arg_key,
  v AS arg_value,
  count() AS invalid_n,
  uniqExact(session_) AS sessions_n
FROM (
  SELECT CAST(tool AS String) AS tool_name, session_key AS session_, arg_keys AS keys_, arg_values AS values_
  FROM calls
  WHERE $__timeFilter(ts)
    AND category = 'INVALID_ARGUMENT'
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
    AND call_id GLOBAL NOT IN (
      SELECT call_id
      FROM calls
      WHERE $__timeFilter(ts)
        AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
        AND $__conditionalAll(server IN (${server:singlequote}), $server)
        AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
        AND call_id GLOBAL IN (
          SELECT call_id
          FROM calls
          WHERE $__timeFilter(ts)
            AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
            AND $__conditionalAll(server IN (${server:singlequote}), $server)
            AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
            AND category = 'INVALID_ARGUMENT')
      GROUP BY call_id
      HAVING count() > 1)
  UNION ALL
  SELECT CAST(tool AS String), session_key, l.2, l.3
  FROM (
    SELECT tool, session_key, argMax((CAST(category AS String), arg_keys, arg_values), ingested_ms) AS l
    FROM calls
    WHERE $__timeFilter(ts)
      AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
      AND $__conditionalAll(server IN (${server:singlequote}), $server)
      AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
      AND call_id GLOBAL IN (
        SELECT call_id
        FROM calls
        WHERE $__timeFilter(ts)
          AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
          AND $__conditionalAll(server IN (${server:singlequote}), $server)
          AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
          AND call_id GLOBAL IN (
            SELECT call_id
            FROM calls
            WHERE $__timeFilter(ts)
              AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
              AND $__conditionalAll(server IN (${server:singlequote}), $server)
              AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
              AND category = 'INVALID_ARGUMENT')
        GROUP BY call_id
        HAVING count() > 1)
    GROUP BY tenant, server, tool, session_key, ts_ms, call_id
  )
  WHERE l.1 = 'INVALID_ARGUMENT'
)
ARRAY JOIN keys_ AS k, values_ AS v
GROUP BY tool_name, arg_key, arg_value
ORDER BY tool_name, invalid_n DESC, arg_key, arg_value
LIMIT 10 BY tool_name
