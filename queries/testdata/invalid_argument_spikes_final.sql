-- The definition of the INVALID_ARGUMENT spikes, in one statement: per tool
-- and bucket of @step_s seconds from @origin_s, the share of calls that
-- failed as INVALID_ARGUMENT, compared with the tool's share over the
-- @baseline_s seconds before the bucket. A bucket is a spike when it has at
-- least @min_calls calls, a share of at least @min_share, and a share at
-- least @ratio times the baseline share (a tool with no baseline calls
-- compares with 0, so any share above the floor is a spike). Reads calls
-- FINAL over [origin, to), so that a re-ingested call counts once, as its
-- latest ingest. The API ran it for steps off the 5-minute grid until the
-- seventh round (BENCHMARKS.md; 14.6 s on ClickHouse 18.16 over a day of 10M
-- calls). queries.InvalidArgumentSpikes now counts the range first and reads
-- the baseline only for the tools whose range passes the floor;
-- TestInvalidArgumentSpikesMatchTheDefinition holds it to this text.
SELECT
  tool_name,
  bucket_s,
  calls_n,
  invalid_n,
  base_calls,
  base_invalid
FROM (
  SELECT
    tool_name,
    groupArray(b) AS bs,
    groupArray(n) AS ns,
    groupArray(inv) AS invs,
    arrayMap(i -> toUInt64(arraySum(arrayFilter((y, x) -> x >= bs[i] - @baseline_s AND x < bs[i], ns, bs))), arrayEnumerate(bs)) AS base_ns,
    arrayMap(i -> toUInt64(arraySum(arrayFilter((y, x) -> x >= bs[i] - @baseline_s AND x < bs[i], invs, bs))), arrayEnumerate(bs)) AS base_invs
  FROM (
    SELECT
      tool AS tool_name,
      @origin_s + intDiv(toInt64(toUInt32(ts)) - @origin_s, @step_s) * @step_s AS b,
      count() AS n,
      countIf(category = 'INVALID_ARGUMENT') AS inv
    FROM calls FINAL
    WHERE ts >= toDateTime(@origin_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
      AND ts_ms >= @origin_s * 1000 AND ts_ms < @to_ms
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND (@server = '' OR server = @server)
      AND (@tool = '' OR tool = @tool)
    GROUP BY tool_name, b
    ORDER BY tool_name, b
  )
  GROUP BY tool_name
)
ARRAY JOIN bs AS bucket_s, ns AS calls_n, invs AS invalid_n, base_ns AS base_calls, base_invs AS base_invalid
WHERE bucket_s >= @from_s
  AND calls_n >= @min_calls
  AND invalid_n >= @min_share * calls_n
  AND invalid_n * if(base_calls = 0, 1, base_calls) >= @ratio * if(base_calls = 0, 0, base_invalid) * calls_n
ORDER BY tool_name, bucket_s
