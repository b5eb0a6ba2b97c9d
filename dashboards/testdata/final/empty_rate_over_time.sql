-- Empty-result rate per tool in buckets of the panel interval; a bucket with
-- fewer than min_calls calls that did not fail is left out, so that one
-- empty call out of two does not draw a 50 % spike.
SELECT
  toDateTime(intDiv(toUInt32(ts), $__interval_s) * $__interval_s) AS time,
  toString(tool) AS tool_name,
  countIf(category = 'EMPTY_RESULT') / countIf(is_failure = 0) AS empty_rate
FROM calls FINAL
WHERE $__timeFilter(ts)
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
GROUP BY time, tool_name
HAVING countIf(is_failure = 0) >= ${min_calls}
ORDER BY time, tool_name
