-- Retry chains started per bucket of the panel interval, by how they ended:
-- retry_then_success, retry_then_fail, or no_retry (a failure not retried).
-- Chains are cut as in retry_outcomes.sql (60 s retry window) and bucketed
-- by the time of their first call.
-- The calls are grouped in an inner query and the chain arrays computed from
-- the group in the outer one: with the grouping and the lambdas in one
-- SELECT, ClickHouse 26.x evaluated the lambdas for every group before
-- HAVING and took seconds for a few hundred sessions.
SELECT
  toDateTime(intDiv(intDiv(ch.7, 1000), $__interval_s) * $__interval_s) AS time,
  multiIf(ch.4 = 2, 'retry_then_success', ch.4 = 1, 'retry_then_fail', 'no_retry') AS outcome,
  count() AS chains_n
FROM (
  SELECT
    arrayFilter((x, i) -> i = 1 OR x.3 != c0[i - 1].3 OR x.1 != c0[i - 1].1, c0, arrayEnumerate(c0)) AS c,
    arrayMap(x -> x.1, c) AS t,
    arrayMap(x -> x.4, c) AS f,
    arrayMap(x -> x.5, c) AS h,
    arrayEnumerate(c) AS ix,
    arrayMap(i -> toUInt8(i > 1 AND f[i - 1] = 1 AND t[i] - t[i - 1] <= 60000), ix) AS r,
    arrayMap(i -> toUInt8(f[i] = 1 AND r[i] = 0), ix) AS st,
    arrayFilter(i -> st[i] = 1, ix) AS s_at,
    arrayFilter(i -> (f[i] = 1 OR r[i] = 1) AND (i = length(c) OR r[i + 1] = 0), ix) AS e_at,
    arrayCumSum(st) AS k,
    arrayCumSum(arrayMap(i -> toUInt8(r[i] = 1 AND h[i] != h[s_at[k[i]]]), ix)) AS dc,
    arrayFilter(
      x -> x.7 >= toInt64(toUInt32($__fromTime)) * 1000 AND x.7 < (toInt64(toUInt32($__toTime)) + 1) * 1000,
      arrayMap(
        (s, e) -> (c[s].6, c[s].7, c[s].8, toUInt8(multiIf(e = s, 0, f[e] = 1, 1, 2)), toUInt64(e - s + 1), toUInt8(dc[e] > dc[s]), t[s]),
        s_at, e_at)) AS chains_
  FROM (
    SELECT
      arraySort(groupArray((ts_ms, request_id, call_id, is_failure, args_hash, toString(category), declared_retryable, expected_retryable))) AS c0
    FROM calls FINAL
    WHERE ts >= $__fromTime - 60 AND ts <= $__toTime + 600
      AND ts_ms >= toInt64(toUInt32($__fromTime)) * 1000 - 60000
      AND ts_ms < (toInt64(toUInt32($__toTime)) + 1) * 1000 + 600000
      AND continuation = 0
      AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
      AND $__conditionalAll(server IN (${server:singlequote}), $server)
      AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
    GROUP BY tenant, server, session_key, tool
    HAVING max(is_failure) = 1
  )
)
ARRAY JOIN chains_ AS ch
GROUP BY time, outcome
ORDER BY time, outcome
