-- Failure rate (failed calls / calls) and empty-result rate (EMPTY_RESULT /
-- calls that did not fail) per bucket of the panel interval.
SELECT
  toDateTime(intDiv(toUInt32(ts), $__interval_s) * $__interval_s) AS time,
  sum(is_failure) / count() AS failure_rate,
  countIf(category = 'EMPTY_RESULT') / greatest(countIf(is_failure = 0), 1) AS empty_rate
FROM calls FINAL
WHERE $__timeFilter(ts)
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
GROUP BY time
ORDER BY time
