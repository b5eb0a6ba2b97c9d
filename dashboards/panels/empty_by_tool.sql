-- Empty-result rate per tool over the range: EMPTY_RESULT calls as a share
-- of the calls that did not fail; tools with fewer than min_calls such calls
-- are left out. From the rollup calls_5m, each call counted once
-- (docs/dashboards.md). Distinct call ids are merged per 5-minute bucket, which
-- holds every copy of a call, and the buckets' counts added, so that no hash
-- set grows beyond one bucket's calls (one set of every call id in the range
-- was up to 25 % slower on ClickHouse 18.16 at 10M calls).
-- The hours the retention job has folded come from their plain counts
-- per 5-minute bucket in calls_5m_folded (a current fold's, the counts
-- uniqExactMerge gives over the same states), the other hours from
-- calls_5m's states (docs/dashboards.md): with 1,820 tool names over 24 h
-- of 10M calls, merging 524,160 (tool, bucket) sets took 0.7 s on 18.16
-- (BENCHMARKS.md, twenty-sixth round).
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
  PREWHERE toDateTime(intDiv(toUInt32(bucket), 3600) * 3600, 'UTC') GLOBAL NOT IN (SELECT hour FROM calls_5m_current_folds)
  WHERE $__timeFilter(bucket)
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY tool_name, bucket
  UNION ALL
  SELECT toString(tool) AS tool_name, sum(ok), sum(empty)
  FROM calls_5m_folded
  PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds)
  WHERE $__timeFilter(bucket)
    AND hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour <= $__toTime
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY tool_name
)
GROUP BY tool_name
HAVING non_failed_n >= ${min_calls}
ORDER BY empty_rate DESC, tool_name
