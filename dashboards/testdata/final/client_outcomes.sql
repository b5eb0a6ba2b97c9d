-- Retry outcomes by client, the definition: per client (the least clientInfo
-- name of its sequence's calls), the retry chains that started in the range
-- and how they ended, cut as in testdata/final/retry_outcomes.sql from every
-- call once, as its latest ingest (FINAL).
SELECT
  client_ AS client_name,
  count() AS chains_n,
  countIf(ch.4 = 2) AS retry_then_success_n,
  countIf(ch.4 = 1) AS retry_then_fail_n,
  countIf(ch.4 = 0) AS no_retry_n,
  countIf(ch.4 = 2) / greatest(countIf(ch.4 != 0), 1) AS recovered_share,
  sum(ch.5) / count() AS avg_attempts,
  countIf(ch.6 = 1) AS args_changed_n
FROM (
  SELECT
    client_,
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
      min(toString(client)) AS client_,
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
GROUP BY client_name
ORDER BY chains_n DESC, client_name
