-- Retry habits by client, as it was defined with FINAL: every call once, as
-- its latest ingest (panels/client_habits.sql says what the columns mean).
SELECT
  client_ AS client_name,
  count() AS failures_n,
  countIf(fc.6 = 0) AS correctable_n,
  countIf(fc.6 = 0 AND fc.3 = 1) AS resent_n,
  countIf(fc.6 = 0 AND fc.3 = 1) / greatest(countIf(fc.6 = 0), 1) AS resent_share,
  countIf(fc.6 = 1) AS retryable_n,
  countIf(fc.6 = 1 AND fc.2 = 0) AS given_up_n,
  countIf(fc.6 = 1 AND fc.2 = 0) / greatest(countIf(fc.6 = 1), 1) AS given_up_share,
  sum(fc.4) AS with_retry_after_n,
  sum(fc.5) AS before_retry_after_n
FROM (
  SELECT
    client_,
    arrayFilter((x, i) -> i = 1 OR x.3 != c0[i - 1].3 OR x.1 != c0[i - 1].1, c0, arrayEnumerate(c0)) AS c,
    arrayMap(x -> x.1, c) AS t,
    arrayMap(x -> x.5, c) AS h,
    arrayMap(i -> toUInt8(i < length(c) AND t[i + 1] - t[i] <= 60000), arrayEnumerate(c)) AS nx,
    arrayMap(
      i -> (c[i].6, nx[i], toUInt8(nx[i] = 1 AND h[i + 1] = h[i]), toUInt8(c[i].7 > 0), toUInt8(nx[i] = 1 AND c[i].7 > 0 AND t[i + 1] - t[i] < c[i].7), c[i].8),
      arrayFilter(i -> c[i].4 = 1 AND t[i] >= toInt64(toUInt32($__fromTime)) * 1000 AND t[i] < (toInt64(toUInt32($__toTime)) + 1) * 1000, arrayEnumerate(c))) AS fails
  FROM (
    SELECT
      min(toString(client)) AS client_,
      arraySort(groupArray((ts_ms, request_id, call_id, is_failure, args_hash, toString(category), retry_after_ms, expected_retryable))) AS c0
    FROM calls FINAL
    WHERE ts >= $__fromTime AND ts <= $__toTime + 60
      AND ts_ms >= toInt64(toUInt32($__fromTime)) * 1000
      AND ts_ms < (toInt64(toUInt32($__toTime)) + 1) * 1000 + 60000
      AND continuation = 0
      AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
      AND $__conditionalAll(server IN (${server:singlequote}), $server)
      AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
    GROUP BY tenant, server, session_key, tool
    HAVING max(is_failure) = 1
  )
)
ARRAY JOIN fails AS fc
GROUP BY client_name
ORDER BY failures_n DESC, client_name
