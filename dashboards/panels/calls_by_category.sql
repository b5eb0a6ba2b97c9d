-- Calls per second by category (OK, EMPTY_RESULT and every failure
-- category), in buckets of the panel interval (at least 5 minutes). From the
-- rollup calls_5m, each call counted once (docs/dashboards.md).
SELECT
  toDateTime(intDiv(toUInt32(bucket), $__interval_s) * $__interval_s) AS time,
  toString(category) AS category_,
  uniqExactMerge(calls) / $__interval_s AS calls_per_s
FROM calls_5m
WHERE $__timeFilter(bucket)
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
GROUP BY time, category_
ORDER BY time, category_
