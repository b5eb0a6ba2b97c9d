-- INVALID_ARGUMENT share of calls in the range, the number a confusing tool
-- schema or description drives up.
SELECT countIf(category = 'INVALID_ARGUMENT') / greatest(count(), 1) AS invalid_share
FROM calls FINAL
WHERE $__timeFilter(ts)
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
