-- INVALID_ARGUMENT share per tool over the range, tools with fewer than
-- min_calls calls left out: the tools whose schema or description models
-- most often get wrong.
SELECT
  tool AS tool_name,
  count() AS calls_n,
  countIf(category = 'INVALID_ARGUMENT') AS invalid_n,
  countIf(category = 'INVALID_ARGUMENT') / count() AS invalid_share
FROM calls FINAL
WHERE $__timeFilter(ts)
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
GROUP BY tool_name
HAVING calls_n >= ${min_calls}
ORDER BY invalid_share DESC, tool_name
