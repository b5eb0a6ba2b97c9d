-- Failures per second by category, in buckets of the panel interval (at
-- least the rollup's 5 minutes: the panel's minimum interval). Read from the
-- rollup calls_5m, each call counted once (docs/dashboards.md). The
-- bucket is written with integer arithmetic instead of the plugin's
-- time-interval macro, which needs toStartOfInterval (absent from ClickHouse
-- 18.16); the result is the same on every version.
SELECT
  toDateTime(intDiv(toUInt32(bucket), $__interval_s) * $__interval_s) AS time,
  toString(category) AS failure_category,
  uniqExactMerge(calls) / $__interval_s AS failures_per_s
FROM calls_5m
WHERE $__timeFilter(bucket)
  AND is_failure = 1
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
GROUP BY time, failure_category
ORDER BY time, failure_category
