-- Records under fold @fold the calls of the UTC hour [@hour_s, @hour_s +
-- 3600) that retry chains and re-calls can turn on
-- (schema/026_chain_calls_folded.sql): per tenant, server, session key and
-- tool, continuations left out, the calls ordered and their extra copies
-- dropped exactly as the chain panels do (dashboards/panels/retry_outcomes.sql),
-- then kept when failed, when at most 60 s after a failed call, or when in
-- the hour's first 60 s; and the mark (ts_ms 0). Run with the hour's other
-- fold statements, before the fold is recorded.
INSERT INTO chain_calls_folded (hour, fold, tenant, server, tool, session_key, ts_ms, request_id, call_id, ingested_ms,
  is_failure, args_hash, category, declared_retryable, expected_retryable)
SELECT toDateTime(@hour_s, 'UTC'), toUInt64(@fold), tenant_, server_, tool_, session_, x.1, x.2, x.3, -x.4, x.5, x.6, x.7, x.8, x.9
FROM (
  SELECT
    tenant_, server_, tool_, session_,
    arrayMap(x -> x.1, c0) AS t0,
    arrayMap(x -> x.3, c0) AS id0,
    arrayMap((dt, di) -> bitOr(dt != 0, di != 0),
      arrayPushFront(arrayPopFront(arrayDifference(t0)), 1), arrayPushFront(arrayPopFront(arrayDifference(id0)), 1)) AS keep,
    arrayFilter((x, k) -> k = 1, c0, keep) AS c,
    arrayFilter((x, k) -> k = 1, t0, keep) AS t,
    arrayMap(x -> x.5, c) AS f,
    arrayFilter((x, ti, fi, tp, fp) -> ti < @hour_s * 1000 + 60000 OR fi = 1 OR (fp = 1 AND ti - tp <= 60000),
      c, t, f, arrayPushFront(arrayPopBack(t), toInt64(0)), arrayPushFront(arrayPopBack(f), toUInt8(0))) AS kept
  FROM (
    SELECT
      CAST(tenant AS String) AS tenant_,
      CAST(server AS String) AS server_,
      CAST(tool AS String) AS tool_,
      session_key AS session_,
      arraySort(groupArray((ts_ms, request_id, call_id, -ingested_ms, is_failure, args_hash, CAST(category AS String), declared_retryable, expected_retryable))) AS c0
    FROM calls
    WHERE ts >= toDateTime(@hour_s, 'UTC') AND ts < toDateTime(@hour_s + 3600, 'UTC')
      AND continuation = 0
    GROUP BY tenant, server, session_key, tool
  )
)
ARRAY JOIN kept AS x
UNION ALL
SELECT toDateTime(@hour_s, 'UTC'), toUInt64(@fold), '', '', '', '', toInt64(0), '', toUInt64(0), toInt64(0), toUInt8(0), toUInt64(0), '', toInt8(0), toInt8(0)
