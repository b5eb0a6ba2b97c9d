-- Empty-result rate per tool over the range: EMPTY_RESULT calls as a share
-- of the calls that did not fail; tools with fewer than min_calls such calls
-- are left out.
SELECT
  tool AS tool_name,
  countIf(is_failure = 0) AS non_failed_n,
  countIf(category = 'EMPTY_RESULT') AS empty_n,
  countIf(category = 'EMPTY_RESULT') / countIf(is_failure = 0) AS empty_rate
FROM calls FINAL
WHERE $__timeFilter(ts)
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
GROUP BY tool_name
HAVING non_failed_n >= ${min_calls}
ORDER BY empty_rate DESC, tool_name
