-- Calls per second by category (OK, EMPTY_RESULT and every failure
-- category), in buckets of the panel interval.
SELECT
  toDateTime(intDiv(toUInt32(ts), $__interval_s) * $__interval_s) AS time,
  toString(category) AS category_,
  count() / $__interval_s AS calls_per_s
FROM calls FINAL
WHERE $__timeFilter(ts)
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
GROUP BY time, category_
ORDER BY time, category_
