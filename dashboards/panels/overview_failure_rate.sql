-- Failure rate of the range: calls whose category is a failure, as a share of
-- all calls (0 when there are none). From the rollup calls_5m, each call
-- counted once
-- (docs/dashboards.md). Distinct call ids are merged per 5-minute bucket, which
-- holds every copy of a call, and the buckets' counts added, so that no hash
-- set grows beyond one bucket's calls (one set of every call id in the range
-- was up to 25 % slower on ClickHouse 18.16 at 10M calls).
SELECT sum(fail) / greatest(sum(n), 1) AS failure_rate
FROM (
  SELECT uniqExactMerge(calls) AS n, uniqExactMergeIf(calls, is_failure = 1) AS fail
  FROM calls_5m
  WHERE $__timeFilter(bucket)
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY bucket
)
