-- The 20 tools with the most failures in the range, with their calls,
-- failure rate and most frequent failure category (queries/overview.sql
-- asks the same question of the API). From the rollup calls_5m, each call
-- counted once
-- (docs/dashboards.md). Distinct call ids are merged per 5-minute bucket, which
-- holds every copy of a call, and the buckets' counts added, so that no hash
-- set grows beyond one bucket's calls (one set of every call id in the range
-- was up to 25 % slower on ClickHouse 18.16 at 10M calls).
-- The innermost query counts per bucket, tool and category; the middle one
-- adds the buckets per category, the outer one the categories per tool.
SELECT
  tool_name,
  sum(n) AS calls_n,
  sumIf(n, f = 1) AS failures_n,
  failures_n / calls_n AS failure_rate,
  argMax(cat, (f, n, cat)) AS top_category
FROM (
  SELECT tool_name, cat, max(f_) AS f, sum(n_) AS n
  FROM (
    SELECT
      toString(tool) AS tool_name,
      toString(category) AS cat,
      max(is_failure) AS f_,
      uniqExactMerge(calls) AS n_
    FROM calls_5m
    WHERE $__timeFilter(bucket)
      AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
      AND $__conditionalAll(server IN (${server:singlequote}), $server)
      AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
    GROUP BY tool_name, cat, bucket
  )
  GROUP BY tool_name, cat
)
GROUP BY tool_name
HAVING failures_n > 0
ORDER BY failures_n DESC, tool_name
LIMIT 20
