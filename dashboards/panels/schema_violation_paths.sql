-- Schema violations by path (docs/schemas.md): per tool, side (arguments or
-- result), path, reason and suggested value, the calls whose arguments or
-- structured result failed the tool's schema; of them, those the server
-- refused as INVALID_ARGUMENT and those it answered without failing
-- (accepted bad input); and the share of the tool's validated calls. The
-- second branch of the union counts validated calls per tool (the calls
-- marked args_validated, and from ingests before schema migration 024 the
-- violation rows with side arguments: queries/schema_validated.sql), carried
-- to every path of the tool through the array.
-- A call ingested more than once counts once, as its latest ingest, as
-- under FINAL but without it (queries/schema_violations.sql says why and
-- how): the violation rows are grouped by the table's sorting key first and
-- take the latest ingest's values; the validated calls are distinct call
-- ids, which copies do not change.
-- The hours that lie whole in the range and that the retention job has
-- folded come from their plain counts in violations_folded (a current fold
-- with its mark, side empty: the same counts, per hour, and the validated
-- calls in the rows with an empty reason); the raw rows are read for the
-- other hours, the current hour and the range's cut ends as a rule
-- (docs/dashboards.md). Counting the validated calls of 24 hours of 10M
-- calls raw took 0.3 s of the panel's 0.4-0.7 s on 18.16 (BENCHMARKS.md,
-- twenty-seventh round).
SELECT
  tool_name,
  v.1 AS side_name,
  v.2 AS path_name,
  v.3 AS reason_name,
  v.4 AS suggested,
  v.5 AS violating_calls,
  v.6 AS refused_calls,
  v.7 AS accepted_calls,
  v.5 / validated_n AS violation_share
FROM (
  SELECT
    tool_name,
    sum(validated) AS validated_n,
    groupArray((side_, path_, reason_, suggestion_, calls_n, invalid_n, accepted_n)) AS vs
  FROM (
    SELECT
      tool_name,
      side_,
      path_,
      reason_,
      suggestion_,
      sum(calls_b) AS calls_n,
      sum(invalid_b) AS invalid_n,
      sum(accepted_b) AS accepted_n,
      sum(validated_b) AS validated
    FROM (
      SELECT
        tool_name,
        side_,
        path_,
        reason_,
        suggestion_,
        uniqExact(call_id) AS calls_b,
        uniqExactIf(call_id, invalid_1 = 1) AS invalid_b,
        uniqExactIf(call_id, failure_1 = 0) AS accepted_b,
        toUInt64(0) AS validated_b
      FROM (
        SELECT
          CAST(tool AS String) AS tool_name,
          call_id,
          CAST(side AS String) AS side_,
          path AS path_,
          CAST(reason AS String) AS reason_,
          argMax(suggestion, ingested_ms) AS suggestion_,
          argMax(toUInt8(category = 'INVALID_ARGUMENT'), ingested_ms) AS invalid_1,
          argMax(is_failure, ingested_ms) AS failure_1
        FROM call_violations
        PREWHERE toDateTime(intDiv(toUInt32(ts), 3600) * 3600, 'UTC') GLOBAL NOT IN (SELECT hour FROM violations_folded WHERE side = '' AND hour >= $__fromTime AND toUInt32(hour) + 3599 <= toUInt32($__toTime) AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
        WHERE $__timeFilter(ts)
          AND reason != ''
          AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
          AND $__conditionalAll(server IN (${server:singlequote}), $server)
          AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
        GROUP BY tenant, server, tool, ts_ms, call_id, side, path, reason
      )
      GROUP BY tool_name, side_, path_, reason_, suggestion_
      UNION ALL
      SELECT
        tool_name,
        '' AS side_,
        '' AS path_,
        '' AS reason_,
        '' AS suggestion_,
        toUInt64(0) AS calls_b,
        toUInt64(0) AS invalid_b,
        toUInt64(0) AS accepted_b,
        uniqExact(call_id) AS validated_b
      FROM (
        SELECT CAST(tool AS String) AS tool_name, call_id
        FROM calls
        PREWHERE toDateTime(intDiv(toUInt32(ts), 3600) * 3600, 'UTC') GLOBAL NOT IN (SELECT hour FROM violations_folded WHERE side = '' AND hour >= $__fromTime AND toUInt32(hour) + 3599 <= toUInt32($__toTime) AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
        WHERE $__timeFilter(ts)
          AND args_validated = 1
          AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
          AND $__conditionalAll(server IN (${server:singlequote}), $server)
          AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
        UNION ALL
        SELECT CAST(tool AS String) AS tool_name, call_id
        FROM call_violations
        PREWHERE toDateTime(intDiv(toUInt32(ts), 3600) * 3600, 'UTC') GLOBAL NOT IN (SELECT hour FROM violations_folded WHERE side = '' AND hour >= $__fromTime AND toUInt32(hour) + 3599 <= toUInt32($__toTime) AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
        WHERE $__timeFilter(ts)
          AND side = 'arguments'
          AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
          AND $__conditionalAll(server IN (${server:singlequote}), $server)
          AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
      )
      GROUP BY tool_name
      UNION ALL
      SELECT
        CAST(tool AS String) AS tool_name,
        if(reason = '', '', CAST(side AS String)) AS side_,
        path AS path_,
        CAST(reason AS String) AS reason_,
        suggestion AS suggestion_,
        sum(if(reason = '', 0, calls)) AS calls_b,
        sum(invalid) AS invalid_b,
        sum(accepted) AS accepted_b,
        sum(if(reason = '', calls, 0)) AS validated_b
      FROM violations_folded
      PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM violations_folded WHERE side = '' AND hour >= $__fromTime AND toUInt32(hour) + 3599 <= toUInt32($__toTime) AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
      WHERE hour >= $__fromTime AND toUInt32(hour) + 3599 <= toUInt32($__toTime)
        AND side != ''
        AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
        AND $__conditionalAll(server IN (${server:singlequote}), $server)
        AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
      GROUP BY tool_name, side_, path_, reason_, suggestion_
    )
    GROUP BY tool_name, side_, path_, reason_, suggestion_
  )
  GROUP BY tool_name
)
ARRAY JOIN vs AS v
WHERE v.3 != ''
ORDER BY violating_calls DESC, tool_name, side_name, path_name, reason_name, suggested
LIMIT 50
