-- Failure rate (failed calls / calls) and empty-result rate (EMPTY_RESULT /
-- calls that did not fail) per bucket of the panel interval (at least 5
-- minutes), as the overview's two rates count them over the range. From the
-- rollup calls_5m, each call counted once
-- (docs/dashboards.md). Distinct call ids are merged per 5-minute bucket, which
-- holds every copy of a call, and the buckets' counts added, so that no hash
-- set grows beyond one bucket's calls (one set of every call id in the range
-- was up to 25 % slower on ClickHouse 18.16 at 10M calls). The calls, the
-- calls that did not fail and the EMPTY_RESULT calls of the hours the
-- retention job has folded come from their plain counts in calls_5m_folded
-- (a current fold's), the other hours' from calls_5m's states; the failed
-- calls from the states of the rows of failed calls, a few percent of the
-- rollup's rows (docs/dashboards.md, BENCHMARKS.md, twenty-sixth round).
SELECT
  time,
  sum(failed) / sum(n) AS failure_rate,
  sum(empty) / greatest(sum(ok), 1) AS empty_rate
FROM (
  SELECT
    toDateTime(intDiv(toUInt32(bucket), $__interval_s) * $__interval_s) AS time,
    uniqExactMerge(calls) AS n,
    toUInt64(0) AS failed,
    uniqExactMergeIf(calls, is_failure = 0) AS ok,
    uniqExactMergeIf(calls, category = 'EMPTY_RESULT') AS empty
  FROM calls_5m
  PREWHERE toDateTime(intDiv(toUInt32(bucket), 3600) * 3600, 'UTC') GLOBAL NOT IN (SELECT hour FROM calls_5m_current_folds)
  WHERE $__timeFilter(bucket)
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY time, bucket
  UNION ALL
  SELECT
    toDateTime(intDiv(toUInt32(bucket), $__interval_s) * $__interval_s) AS time,
    sum(calls),
    toUInt64(0),
    sum(ok),
    sum(empty)
  FROM calls_5m_folded
  PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds)
  WHERE $__timeFilter(bucket)
    AND hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour <= $__toTime
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY time
  UNION ALL
  SELECT
    toDateTime(intDiv(toUInt32(bucket), $__interval_s) * $__interval_s) AS time,
    toUInt64(0),
    uniqExactMerge(calls),
    toUInt64(0),
    toUInt64(0)
  FROM calls_5m_classes
  PREWHERE is_failure = 1
  WHERE $__timeFilter(bucket)
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY time, bucket
)
GROUP BY time
ORDER BY time
