-- Misflagged calls in the range: calls whose isError flag contradicts their
-- category (a failure sent as a success, or a success flagged as an error).
SELECT sum(misflagged) AS misflagged_n
FROM calls FINAL
WHERE $__timeFilter(ts)
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
