-- Folds the failures of the UTC hour @hour_s into recalls_folded under fold
-- id @fold (schema/031_recalls_folded.sql), with the hour's retry chains:
-- each failure with what came after it, in the steps of
-- dashboards/panels/client_habits.sql, read from the hour's start to 60 s
-- after its end, so that a panel whose range holds the hour finds the same.
INSERT INTO recalls_folded (hour, fold, tenant, server, tool, client, ts_ms, category, expected_retryable, next, same, hinted, early)
SELECT
  toDateTime(@hour_s, 'UTC'),
  toUInt64(@fold),
  tenant_, server_, tool_, client_,
  fc.1, fc.2, fc.3, fc.4, fc.5, fc.6, fc.7
FROM (
  SELECT
    tenant_, server_, tool_, client_,
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
    -- Int64); nx: the next call came within 60 s; same: it also had the same
    -- args_hash. Per failure of the hour (fails): its time, category,
    -- expected retryability, nx, same, whether it carried a retry-after hint
    -- and whether its next call came within 60 s before the hint had passed;
    -- its last element, is_failure, for the filter.
    arrayPushBack(arrayPopFront(t), toInt64(9223372036854775807)) AS tn,
    arrayMap((ti, tj) -> toUInt8(tj - ti <= 60000), t, tn) AS nx,
    arrayMap((n, hc, hn) -> toUInt8(n = 1 AND hc = hn), nx, h, arrayPushBack(arrayPopFront(h), toUInt64(0))) AS same,
    arrayFilter(
      x -> x.8 = 1 AND x.1 >= @hour_s * 1000 AND x.1 < (@hour_s + 3600) * 1000,
      arrayMap((x, n, s, tj) -> (x.1, x.7, x.9, n, s, toUInt8(x.8 > 0), toUInt8(n = 1 AND x.8 > 0 AND tj - x.1 < x.8), x.5), c, nx, same, tn)) AS fails
  FROM (
    SELECT
      tenant AS tenant_,
      server AS server_,
      tool AS tool_,
      min(toString(client)) AS client_,
      arraySort(groupArray((ts_ms, request_id, call_id, -ingested_ms, is_failure, args_hash, CAST(category AS String), toUInt32(least(retry_after_ms, 4294967295)), expected_retryable))) AS c0
    FROM calls
    PREWHERE ts >= toDateTime(@hour_s, 'UTC') AND ts <= toDateTime(@hour_s + 3659, 'UTC')
      AND ts_ms >= @hour_s * 1000
      AND ts_ms < (@hour_s + 3660) * 1000
      AND continuation = 0
      -- Only the groups with a failure in the hour.
      AND cityHash64(tenant, server, session_key, tool) GLOBAL IN (
        SELECT cityHash64(tenant, server, session_key, tool)
        FROM calls
        WHERE ts >= toDateTime(@hour_s, 'UTC') AND ts <= toDateTime(@hour_s + 3599, 'UTC')
          AND ts_ms >= @hour_s * 1000
          AND ts_ms < (@hour_s + 3600) * 1000
          AND continuation = 0
          AND is_failure = 1)
    GROUP BY tenant, server, session_key, tool
    HAVING max(is_failure) = 1
  )
)
ARRAY JOIN fails AS fc
