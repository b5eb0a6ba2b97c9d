-- INVALID_ARGUMENT share per tool over the range, tools with fewer than
-- min_calls calls left out: the tools whose schema or description models
-- most often get wrong. From the rollup calls_5m, each call counted once
-- (docs/dashboards.md). Distinct call ids are merged per 5-minute bucket, which
-- holds every copy of a call, and the buckets' counts added, so that no hash
-- set grows beyond one bucket's calls (one set of every call id in the range
-- was up to 25 % slower on ClickHouse 18.16 at 10M calls).
SELECT
  tool_name,
  sum(n) AS calls_n,
  sum(invalid) AS invalid_n,
  invalid_n / calls_n AS invalid_share
FROM (
  SELECT
    toString(tool) AS tool_name,
    uniqExactMerge(calls) AS n,
    uniqExactMergeIf(calls, category = 'INVALID_ARGUMENT') AS invalid
  FROM calls_5m
  WHERE $__timeFilter(bucket)
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY tool_name, bucket
)
GROUP BY tool_name
HAVING calls_n >= ${min_calls}
ORDER BY invalid_share DESC, tool_name
