-- Empty-result rate per tool over the range: EMPTY_RESULT calls as a share
-- of the calls that did not fail; tools with fewer than min_calls such calls
-- are left out. From the rollup calls_5m, each call counted once
-- (docs/dashboards.md). Distinct call ids are merged per 5-minute bucket, which
-- holds every copy of a call, and the buckets' counts added, so that no hash
-- set grows beyond one bucket's calls (one set of every call id in the range
-- was up to 25 % slower on ClickHouse 18.16 at 10M calls).
SELECT
  tool_name,
  sum(ok) AS non_failed_n,
  sum(empty) AS empty_n,
  empty_n / non_failed_n AS empty_rate
FROM (
  SELECT
    toString(tool) AS tool_name,
    uniqExactMergeIf(calls, is_failure = 0) AS ok,
    uniqExactMergeIf(calls, category = 'EMPTY_RESULT') AS empty
  FROM calls_5m
  WHERE $__timeFilter(bucket)
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY tool_name, bucket
)
GROUP BY tool_name
HAVING non_failed_n >= ${min_calls}
ORDER BY empty_rate DESC, tool_name
