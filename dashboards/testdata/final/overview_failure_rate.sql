-- Failure rate of the range: calls whose category is a failure, as a share of
-- all calls (0 when there are none).
SELECT sum(is_failure) / greatest(count(), 1) AS failure_rate
FROM calls FINAL
WHERE $__timeFilter(ts)
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
