-- Misflagged calls in the range: calls whose isError flag contradicts their
-- category (a failure sent as a success, or a success flagged as an error).
-- From the rollup calls_5m_classes, each call counted once (docs/dashboards.md).
SELECT uniqExactMergeIf(calls, misflagged = 1) AS misflagged_n
FROM calls_5m_classes
WHERE $__timeFilter(bucket)
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
