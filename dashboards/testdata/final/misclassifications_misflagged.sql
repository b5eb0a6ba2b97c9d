-- Misclassified retryables (docs/analytics.md), the misflagged rows: per
-- tool and category, the calls whose isError flag contradicts their
-- category, every call once, as its latest ingest. A row needs min_chains
-- misflagged calls; evidence_share is the misflagged share of the calls.
SELECT
  kind_ AS kind,
  tool_m AS tool_name,
  category_m AS category_name,
  chains_n,
  calls_m AS calls_n,
  recovered_n,
  total_n,
  calls_m / greatest(total_n, 1) AS evidence_share
FROM (
  SELECT
    'misflagged' AS kind_,
    CAST(tool AS String) AS tool_m,
    CAST(category AS String) AS category_m,
    toUInt64(0) AS chains_n,
    toUInt64(sum(misflagged)) AS calls_m,
    toUInt64(0) AS recovered_n,
    toUInt64(count()) AS total_n
  FROM calls FINAL
  WHERE $__timeFilter(ts)
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY tool, category
  HAVING sum(misflagged) >= ${min_chains}
)
ORDER BY tool_name, category_name
