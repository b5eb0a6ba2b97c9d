-- INVALID_ARGUMENT share per tool in hourly buckets, with spikes marked
-- (queries/testdata/invalid_argument_spikes_final.sql, the API's and the
-- alert's definition): a bucket is a spike when it has at least 20 calls, a
-- share of at least 5 %, and at least 3 times the tool's share over the 7
-- days before the bucket (a tool with no baseline compares with 0). The
-- spike column repeats the share in spike buckets only. Buckets are whole
-- hours, whatever the panel interval, because the spike is defined on hours;
-- the 7 days before the range are read for the baseline, summed over each
-- tool's bucket array without window functions.
SELECT
  toDateTime(bucket_s) AS time,
  tool_name,
  invalid_n / calls_n AS invalid_share,
  if(calls_n >= 20
       AND invalid_n * 20 >= calls_n
       AND invalid_n * if(base_calls = 0, 1, base_calls) >= 3 * if(base_calls = 0, 0, base_invalid) * calls_n,
     invalid_n / calls_n, NULL) AS spike
FROM (
  SELECT
    tool_name,
    groupArray(b) AS bs,
    groupArray(n) AS ns,
    groupArray(inv) AS invs,
    arrayMap(i -> toUInt64(arraySum(arrayFilter((y, x) -> x >= bs[i] - 604800 AND x < bs[i], ns, bs))), arrayEnumerate(bs)) AS base_ns,
    arrayMap(i -> toUInt64(arraySum(arrayFilter((y, x) -> x >= bs[i] - 604800 AND x < bs[i], invs, bs))), arrayEnumerate(bs)) AS base_invs
  FROM (
    SELECT
      toString(tool) AS tool_name,
      intDiv(toUInt32(ts), 3600) * 3600 AS b,
      count() AS n,
      countIf(category = 'INVALID_ARGUMENT') AS inv
    FROM calls FINAL
    WHERE ts >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600 - 604800) AND ts <= $__toTime
      AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
      AND $__conditionalAll(server IN (${server:singlequote}), $server)
      AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
    GROUP BY tool_name, b
    ORDER BY tool_name, b
  )
  GROUP BY tool_name
)
ARRAY JOIN bs AS bucket_s, ns AS calls_n, invs AS invalid_n, base_ns AS base_calls, base_invs AS base_invalid
WHERE bucket_s >= intDiv(toUInt32($__fromTime), 3600) * 3600
ORDER BY time, tool_name
