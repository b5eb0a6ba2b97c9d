-- INVALID_ARGUMENT spikes: per tool and bucket of @step_s seconds, the share of
-- calls that failed as INVALID_ARGUMENT, compared with the tool's share over
-- the @baseline_s seconds before the bucket. A bucket is a spike when it has at
-- least @min_calls calls, a share of at least @min_share, and a share at least
-- @ratio times the baseline share (a tool with no baseline calls compares with
-- 0, so any share above the floor is a spike). A spike says that a tool's
-- schema or description confuses models. Reads [from - baseline, to) once;
-- the baseline is summed over the tool's bucket array, without window
-- functions, so the same text runs on 18.16 and modern servers. Reads calls
-- FINAL so that a re-ingested call counts once, as its latest ingest. The
-- other counting queries subtract replaced copies instead (see
-- overview_totals.sql), which is faster over a day or two; this one always
-- reads eight days with the default baseline, and over eight days modern
-- servers, which merge FINAL partition by partition in parallel, were faster
-- with FINAL (0.59 s against 0.77 s at 10M calls on 26.7; BENCHMARKS.md).
-- InvalidArgumentSpikes uses this form only when the step is not a whole
-- number of 5-minute cells; otherwise invalid_argument_spikes_rollup.sql
-- reads the baseline from the rollup and only the range from the raw calls.
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
