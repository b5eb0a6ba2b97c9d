-- Calls that failed their tool's schema, per bucket of the panel interval,
-- by what happened: the server refused the arguments (INVALID_ARGUMENT),
-- accepted them (the call did not fail: bad input got through), failed
-- otherwise, or returned structured content its outputSchema rules out.
-- A call ingested more than once counts as its latest ingest, as under
-- FINAL but without it (queries/schema_violations.sql says why and how): the
-- violation rows are grouped by the table's sorting key first, and the
-- latest ingest's classification taken.
-- The hours that lie whole in the range and that the retention job has
-- folded come from their counts per second, tool and outcome in
-- violation_outcomes_folded (a current fold with its mark, outcome empty),
-- which add up to any interval's; the raw rows are read for the other
-- hours (docs/dashboards.md). The raw rows with a reason lie in every
-- granule of call_violations, so reading them means reading the day's
-- rows: 0.2-0.4 s for 24 hours of 10M calls on 18.16 (BENCHMARKS.md,
-- twenty-seventh round).
SELECT
  time,
  outcome,
  sum(n) AS violating_calls
FROM (
  SELECT
    toDateTime(intDiv(toUInt32(ts_1), $__interval_s) * $__interval_s) AS time,
    multiIf(side_1 = 'result', 'result breaks outputSchema',
            invalid_1 = 1, 'arguments refused',
            failure_1 = 0, 'arguments accepted',
            'arguments, other failure') AS outcome,
    uniqExact(call_id) AS n
  FROM (
    SELECT
      any(ts) AS ts_1,
      call_id,
      toString(side) AS side_1,
      argMax(toUInt8(category = 'INVALID_ARGUMENT'), ingested_ms) AS invalid_1,
      argMax(is_failure, ingested_ms) AS failure_1
    FROM call_violations
    PREWHERE toDateTime(intDiv(toUInt32(ts), 3600) * 3600, 'UTC') GLOBAL NOT IN (SELECT hour FROM violation_outcomes_folded WHERE outcome = '' AND hour >= $__fromTime AND toUInt32(hour) + 3599 <= toUInt32($__toTime) AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
    WHERE $__timeFilter(ts)
      AND reason != ''
      AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
      AND $__conditionalAll(server IN (${server:singlequote}), $server)
      AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
    GROUP BY tenant, server, tool, ts_ms, call_id, side, path, reason
  )
  GROUP BY time, outcome
  UNION ALL
  SELECT
    toDateTime(intDiv(toUInt32(second), $__interval_s) * $__interval_s) AS time,
    CAST(outcome AS String) AS outcome_,
    sum(calls) AS n
  FROM violation_outcomes_folded
  PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM violation_outcomes_folded WHERE outcome = '' AND hour >= $__fromTime AND toUInt32(hour) + 3599 <= toUInt32($__toTime) AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
  WHERE hour >= $__fromTime AND toUInt32(hour) + 3599 <= toUInt32($__toTime)
    AND outcome != ''
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY time, outcome_
)
GROUP BY time, outcome
ORDER BY time, outcome
