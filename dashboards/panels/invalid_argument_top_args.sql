-- The argument key=value pairs most often sent with INVALID_ARGUMENT calls,
-- at most 10 per tool (queries/invalid_argument_top_args.sql without the
-- buckets): the values that a bad schema or a renamed enum makes models send.
--
-- A re-ingested call counts once, as its latest ingest, without FINAL: only
-- a call with an INVALID_ARGUMENT copy can be one, so those calls are found
-- first, and each, grouped by its identity (the sort key), counts when its
-- latest copy (largest ingested_ms) is INVALID_ARGUMENT, with that copy's
-- arguments (docs/dashboards.md). The rows of the calls ingested once plus
-- the latest copy of each call ingested more than once, found by hashing
-- those calls' ids, took 1.2x as long on 18.16 at 10M calls with 15 %
-- failed and 1.8x with 3 % (BENCHMARKS.md, sixteenth round).
SELECT
  tool_name,
  k AS arg_key,
  v AS arg_value,
  count() AS invalid_n,
  uniqExact(session_) AS sessions_n
FROM (
  SELECT tool_name, session_, l.2 AS keys_, l.3 AS values_
  FROM (
    SELECT
      CAST(tool AS String) AS tool_name,
      session_key AS session_,
      argMax((CAST(category AS String), arg_keys, arg_values), ingested_ms) AS l
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
    GROUP BY tenant, server, tool, session_key, ts_ms, call_id
  )
  WHERE l.1 = 'INVALID_ARGUMENT'
)
ARRAY JOIN keys_ AS k, values_ AS v
GROUP BY tool_name, arg_key, arg_value
ORDER BY tool_name, invalid_n DESC, arg_key, arg_value
LIMIT 10 BY tool_name
