-- INVALID_ARGUMENT share of calls in the range, the number a confusing tool
-- schema or description drives up. From the rollup calls_5m, each call
-- counted once
-- (docs/dashboards.md). Distinct call ids are merged per 5-minute bucket, which
-- holds every copy of a call, and the buckets' counts added, so that no hash
-- set grows beyond one bucket's calls (one set of every call id in the range
-- was up to 25 % slower on ClickHouse 18.16 at 10M calls).
SELECT sum(invalid) / greatest(sum(n), 1) AS invalid_share
FROM (
  SELECT uniqExactMerge(calls) AS n, uniqExactMergeIf(calls, category = 'INVALID_ARGUMENT') AS invalid
  FROM calls_5m
  WHERE $__timeFilter(bucket)
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY bucket
)
