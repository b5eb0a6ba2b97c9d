-- Unchanged re-calls (docs/analytics.md), as queries/recalls.sql computes
-- them: per category, the failed calls in the range, those followed within
-- 60 s by another call of the same tool in the same session key, and those
-- whose next call had the identical args_hash, the agent sending the same
-- request again; and the failures that carried the server's retry-after hint,
-- and those whose next call came within 60 s before it had passed. A high unchanged share says the error text does not tell
-- the model what to change. Continuations are left out; calls are read up to
-- one window past the range so that a failure near its end has its next call.
-- As in the chain queries, the grouping is an inner query and the arrays are
-- computed from it in the outer one, which ClickHouse 26.x runs much faster.
SELECT
  fc.1 AS category_,
  count() AS failures_n,
  sum(fc.2) AS with_next_call_n,
  sum(fc.3) AS unchanged_n,
  sum(fc.3) / count() AS unchanged_rate,
  sum(fc.4) AS with_retry_after_n,
  sum(fc.5) AS before_retry_after_n
FROM (
  SELECT
    arrayFilter((x, i) -> i = 1 OR x.3 != c0[i - 1].3 OR x.1 != c0[i - 1].1, c0, arrayEnumerate(c0)) AS c,
    arrayMap(x -> x.1, c) AS t,
    arrayMap(x -> x.5, c) AS h,
    arrayMap(i -> toUInt8(i < length(c) AND t[i + 1] - t[i] <= 60000), arrayEnumerate(c)) AS nx,
    arrayMap(
      i -> (c[i].6, nx[i], toUInt8(nx[i] = 1 AND h[i + 1] = h[i]), toUInt8(c[i].7 > 0), toUInt8(nx[i] = 1 AND c[i].7 > 0 AND t[i + 1] - t[i] < c[i].7)),
      arrayFilter(i -> c[i].4 = 1 AND t[i] >= toInt64(toUInt32($__fromTime)) * 1000 AND t[i] < (toInt64(toUInt32($__toTime)) + 1) * 1000, arrayEnumerate(c))) AS fails
  FROM (
    SELECT arraySort(groupArray((ts_ms, request_id, call_id, is_failure, args_hash, toString(category), retry_after_ms))) AS c0
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
GROUP BY category_
ORDER BY failures_n DESC, category_
