-- Failures per second by category, in buckets of the panel interval. The
-- bucket is written with integer arithmetic on the ts column instead of the
-- plugin's time-interval macro, which needs toStartOfInterval (absent from
-- ClickHouse 18.16); the result is the same on every version.
SELECT
  toDateTime(intDiv(toUInt32(ts), $__interval_s) * $__interval_s) AS time,
  toString(category) AS failure_category,
  count() / $__interval_s AS failures_per_s
FROM calls FINAL
WHERE $__timeFilter(ts)
  AND is_failure = 1
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
GROUP BY time, failure_category
ORDER BY time, failure_category
