-- Empty-result rate of the range: EMPTY_RESULT calls as a share of the calls
-- that did not fail (0 when there are none).
SELECT countIf(category = 'EMPTY_RESULT') / greatest(countIf(is_failure = 0), 1) AS empty_rate
FROM calls FINAL
WHERE $__timeFilter(ts)
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
