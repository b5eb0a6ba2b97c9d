-- Unchanged re-calls (docs/analytics.md), as queries/recalls.sql computes
-- them: per category, the failed calls in the range, those followed within
-- 60 s by another call of the same tool in the same session key, and those
-- whose next call had the identical args_hash, the agent sending the same
-- request again; and the failures that carried the server's retry-after hint,
-- and those whose next call came within 60 s before it had passed (the
-- client did not wait as asked). A high unchanged share says the error text does not tell
-- the model what to change. Continuations are left out; calls are read up to
-- one window past the range so that a failure near its end has its next call.
-- As in the chain queries, the grouping is an inner query and the arrays are
-- computed from it in the outer one, which ClickHouse 26.x runs much faster.
-- A re-ingested call counts once without FINAL: the array step drops the
-- extra copies of a call, keeping its latest ingest (queries/recalls.sql).
SELECT
  fc.1 AS category_,
  count() AS failures_n,
  sum(fc.2) AS with_next_call_n,
  sum(fc.3) AS unchanged_n,
  sum(fc.3) / count() AS unchanged_rate,
  sum(fc.6) AS with_retry_after_n,
  sum(fc.7) AS before_retry_after_n
FROM (
  SELECT
    arrayMap(x -> x.1, c0) AS t0,
    arrayMap(x -> x.3, c0) AS id0,
    -- c: the sequence without the extra copies of a re-ingested call (same
    -- ts_ms and call_id as the element before; the latest ingest sorts first).
    arrayMap((dt, di) -> bitOr(dt != 0, di != 0),
      arrayPushFront(arrayPopFront(arrayDifference(t0)), 1), arrayPushFront(arrayPopFront(arrayDifference(id0)), 1)) AS keep,
    arrayFilter((x, k) -> k = 1, c0, keep) AS c,
    arrayFilter((x, k) -> k = 1, t0, keep) AS t,
    arrayMap(x -> x.6, c) AS h,
    -- tn: each call's successor's time (the last call has none: the largest
    -- Int64); nx: the next call came within 60 s; same: it also had
    -- the same args_hash. Per failure (fails): its category, nx, same,
    -- whether it carried a retry-after hint (clamped to UInt32 ms in c0,
    -- which keeps the arrays small) and whether its next call came within 60 s before
    -- the hint had passed.
    arrayPushBack(arrayPopFront(t), toInt64(9223372036854775807)) AS tn,
    arrayMap((ti, tj) -> toUInt8(tj - ti <= 60000), t, tn) AS nx,
    arrayMap((n, hc, hn) -> toUInt8(n = 1 AND hc = hn), nx, h, arrayPushBack(arrayPopFront(h), toUInt64(0))) AS same,
    arrayFilter(
      x -> x.4 = 1 AND x.5 >= toInt64(toUInt32($__fromTime)) * 1000 AND x.5 < (toInt64(toUInt32($__toTime)) + 1) * 1000,
      arrayMap((x, n, s, tj) -> (x.7, n, s, x.5, x.1, toUInt8(x.8 > 0), toUInt8(n = 1 AND x.8 > 0 AND tj - x.1 < x.8)), c, nx, same, tn)) AS fails
  FROM (
    SELECT arraySort(groupArray((ts_ms, request_id, call_id, -ingested_ms, is_failure, args_hash, CAST(category AS String), toUInt32(least(retry_after_ms, 4294967295))))) AS c0
    FROM calls
    PREWHERE ts >= $__fromTime AND ts <= $__toTime + 60
      AND ts_ms >= toInt64(toUInt32($__fromTime)) * 1000
      AND ts_ms < (toInt64(toUInt32($__toTime)) + 1) * 1000 + 60000
      AND continuation = 0
      AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
      AND $__conditionalAll(server IN (${server:singlequote}), $server)
      AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
      -- Only the groups with a failure (queries/retry_outcomes.sql).
      AND cityHash64(tenant, server, session_key, tool) GLOBAL IN (
        SELECT cityHash64(tenant, server, session_key, tool)
        FROM calls
        WHERE ts >= $__fromTime AND ts <= $__toTime + 60
          AND ts_ms >= toInt64(toUInt32($__fromTime)) * 1000
          AND ts_ms < (toInt64(toUInt32($__toTime)) + 1) * 1000 + 60000
          AND continuation = 0
          AND is_failure = 1
          AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
          AND $__conditionalAll(server IN (${server:singlequote}), $server)
          AND $__conditionalAll(tool IN (${tool:singlequote}), $tool))
    GROUP BY tenant, server, session_key, tool
    HAVING max(is_failure) = 1
  )
)
ARRAY JOIN fails AS fc
GROUP BY category_
ORDER BY failures_n DESC, category_
