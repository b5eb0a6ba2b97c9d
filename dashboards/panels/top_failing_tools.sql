-- The 20 tools with the most failures in the range, with their calls,
-- failure rate and most frequent failure category (queries/overview.sql
-- asks the same question of the API). From the rollup calls_5m, each call
-- counted once
-- (docs/dashboards.md). Distinct call ids are merged per 5-minute bucket, which
-- holds every copy of a call, and the buckets' counts added, so that no hash
-- set grows beyond one bucket's calls (one set of every call id in the range
-- was up to 25 % slower on ClickHouse 18.16 at 10M calls).
-- A tool's failures are the sum of its failure categories' counts, read from
-- the states of the rows of failed calls only, a few percent of the rollup's
-- rows; its top category is the failure category with the most of them, of
-- those with as many the greatest name (a tool with failures has one, and it
-- outranks every other). Its calls come,
-- for the hours the retention job has folded, from their plain counts in
-- calls_5m_folded (a current fold's), for the other hours from calls_5m's
-- states: with 1,820 tool names merging every (tool, category, bucket) set
-- of 24 h took 0.9 s on 18.16 (BENCHMARKS.md, twenty-sixth round).
SELECT
  tool_name,
  sum(n) AS calls_n,
  sum(fn) AS failures_n,
  failures_n / calls_n AS failure_rate,
  argMax(cat, (fn, cat)) AS top_category
FROM (
  SELECT
    toString(tool) AS tool_name,
    '' AS cat,
    uniqExactMerge(calls) AS n,
    toUInt64(0) AS fn
  FROM calls_5m
  PREWHERE toDateTime(intDiv(toUInt32(bucket), 3600) * 3600, 'UTC') GLOBAL NOT IN (SELECT hour FROM calls_5m_current_folds)
  WHERE $__timeFilter(bucket)
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY tool_name, bucket
  UNION ALL
  SELECT toString(tool) AS tool_name, '', sum(calls), toUInt64(0)
  FROM calls_5m_folded
  PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds)
  WHERE $__timeFilter(bucket)
    AND hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour <= $__toTime
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY tool_name
  UNION ALL
  SELECT
    toString(tool) AS tool_name,
    CAST(category AS String) AS cat,
    toUInt64(0),
    uniqExactMerge(calls)
  FROM calls_5m_classes
  PREWHERE is_failure = 1
  WHERE $__timeFilter(bucket)
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY tool_name, cat
)
GROUP BY tool_name
HAVING failures_n > 0
ORDER BY failures_n DESC, tool_name
LIMIT 20
