-- The 20 tools with the most failures in the range, with their calls,
-- failure rate and most frequent failure category (queries/overview.sql
-- asks the same question of the API).
SELECT
  tool AS tool_name,
  count() AS calls_n,
  sum(is_failure) AS failures_n,
  sum(is_failure) / count() AS failure_rate,
  topKIf(1)(toString(category), is_failure = 1)[1] AS top_category
FROM calls FINAL
WHERE $__timeFilter(ts)
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
GROUP BY tool_name
HAVING failures_n > 0
ORDER BY failures_n DESC, tool_name
LIMIT 20
