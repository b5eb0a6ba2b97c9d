-- The 20 tools with the most failures in the range, with their calls,
-- failure rate and most frequent failure category (queries/overview.sql
-- asks the same question of the API); of failure categories with as many
-- failures, the greatest name, as the panel defines it.
SELECT
  tool_name,
  sum(n) AS calls_n,
  sum(fn) AS failures_n,
  failures_n / calls_n AS failure_rate,
  argMax(cat, (fn, cat)) AS top_category
FROM (
  SELECT
    toString(tool) AS tool_name,
    toString(category) AS cat,
    count() AS n,
    sum(is_failure) AS fn
  FROM calls FINAL
  WHERE $__timeFilter(ts)
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY tool_name, cat
)
GROUP BY tool_name
HAVING failures_n > 0
ORDER BY failures_n DESC, tool_name
LIMIT 20
