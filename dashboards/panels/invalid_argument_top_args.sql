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
-- The hours that lie whole in the range and that the retention job has
-- folded come from their counts per session and pair in
-- invalid_args_folded (a current fold with its mark, calls 0: the same
-- calls, counted the same way, per hour), and the sessions are counted
-- over both branches' session keys; the raw calls are read for the other
-- hours, the current hour and the range's cut ends as a rule. Finding the
-- INVALID_ARGUMENT calls in the raw calls is cheap, but reading their
-- argument arrays reads every granule of the range, since those calls lie
-- in all of them: 0.2-0.3 s for 24 hours of 10M calls on 18.16
-- (BENCHMARKS.md, twenty-ninth round). The raw branch finds the
-- INVALID_ARGUMENT calls of the hours not folded, then reads their rows by
-- call id (PREWHERE; a call id hashes the call's time too, so those rows
-- lie in the same hours): setting the folded hours aside on every row's
-- time first read 3 times the bytes over a range that cuts hours (112
-- against 36 MB). Both read from the range's cut first hour and from its
-- first whole hour without a current fold on (a constant, as the spikes
-- panel's), so that the server skips the parts in between. That hour is the
-- dashboard's hidden variable args_bound (variables/args_bound.sql), which
-- Grafana computes once before the panels: as a scalar subquery in both
-- places, 18.16 ran it again at every nesting level above them
-- (BENCHMARKS.md, thirty-third round).
SELECT
  tool_name,
  k AS arg_key,
  v AS arg_value,
  sum(n) AS invalid_n,
  uniqExact(session_) AS sessions_n
FROM (
  SELECT tool_name, session_, k, v, count() AS n
  FROM (
    SELECT tool_name, session_, l.2 AS keys_, l.3 AS values_
    FROM (
      SELECT
        CAST(tool AS String) AS tool_name,
        session_key AS session_,
        argMax((CAST(category AS String), arg_keys, arg_values), ingested_ms) AS l
      FROM calls
      PREWHERE call_id GLOBAL IN (
        SELECT call_id
        FROM calls
        PREWHERE toDateTime(intDiv(toUInt32(ts), 3600) * 3600, 'UTC') GLOBAL NOT IN (SELECT hour FROM invalid_args_folded WHERE calls = 0 AND hour >= $__fromTime AND toUInt32(hour) + 3599 <= toUInt32($__toTime) AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
        WHERE $__timeFilter(ts)
          AND (ts < toDateTime(intDiv(toUInt32($__fromTime) + 3599, 3600) * 3600) OR ts >= toDateTime(${args_bound}))
          AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
          AND $__conditionalAll(server IN (${server:singlequote}), $server)
          AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
          AND category = 'INVALID_ARGUMENT')
      WHERE $__timeFilter(ts)
        AND (ts < toDateTime(intDiv(toUInt32($__fromTime) + 3599, 3600) * 3600) OR ts >= toDateTime(${args_bound}))
        AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
        AND $__conditionalAll(server IN (${server:singlequote}), $server)
        AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
      GROUP BY tenant, server, tool, session_key, ts_ms, call_id
    )
    WHERE l.1 = 'INVALID_ARGUMENT'
  )
  ARRAY JOIN keys_ AS k, values_ AS v
  GROUP BY tool_name, session_, k, v
  UNION ALL
  SELECT CAST(tool AS String) AS tool_name, session_key AS session_, arg_key AS k, arg_value AS v, calls AS n
  FROM invalid_args_folded
  PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM invalid_args_folded WHERE calls = 0 AND hour >= $__fromTime AND toUInt32(hour) + 3599 <= toUInt32($__toTime) AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
  WHERE hour >= $__fromTime AND toUInt32(hour) + 3599 <= toUInt32($__toTime)
    AND calls > 0
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
)
GROUP BY tool_name, arg_key, arg_value
ORDER BY tool_name, invalid_n DESC, arg_key, arg_value
LIMIT 10 BY tool_name
