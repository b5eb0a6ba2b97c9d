-- Failure rate (failed calls / calls) and empty-result rate (EMPTY_RESULT /
-- calls that did not fail) per bucket of the panel interval (at least 5
-- minutes). From the rollup calls_5m, each call counted once
-- (docs/dashboards.md). Distinct call ids are merged per 5-minute bucket, which
-- holds every copy of a call, and the buckets' counts added, so that no hash
-- set grows beyond one bucket's calls (one set of every call id in the range
-- was up to 25 % slower on ClickHouse 18.16 at 10M calls). Each call is merged
-- into one set, that of its class (failed, empty, ok), and the rates come
-- from the classes' counts.
SELECT
  time,
  sumIf(n, class_ = 'failed') / sum(n) AS failure_rate,
  sumIf(n, class_ = 'empty') / greatest(sumIf(n, class_ != 'failed'), 1) AS empty_rate
FROM (
  SELECT
    toDateTime(intDiv(toUInt32(bucket), $__interval_s) * $__interval_s) AS time,
    multiIf(is_failure = 1, 'failed', category = 'EMPTY_RESULT', 'empty', 'ok') AS class_,
    uniqExactMerge(calls) AS n
  FROM calls_5m
  WHERE $__timeFilter(bucket)
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY time, bucket, class_
)
GROUP BY time
ORDER BY time
