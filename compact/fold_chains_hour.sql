-- Folds the retry chains that start in the UTC hour @hour_s into
-- chains_folded under fold id @fold (schema/026_chains_folded.sql): the
-- chains of the chain panels, in the steps of
-- dashboards/panels/retry_outcomes.sql, read from 60 s before the hour to
-- 600 s after it, so that a panel whose range holds the hour finds the same
-- chains. Each chain keeps its session key, its client (the least clientInfo
-- name of the sequence's calls read, as recalls_folded's), its last call's
-- ts_ms and its first call's call_id, for /retry-loops and /retry-outcomes
-- by client.
INSERT INTO chains_folded (hour, fold, tenant, server, tool, session_key, client, start_ms, end_ms, first_call_id, category, declared_retryable, expected_retryable, outcome, attempts, args_changed, open)
SELECT
  toDateTime(@hour_s, 'UTC'),
  toUInt64(@fold),
  tenant_, server_, tool_, session_, client_,
  ch.7, ch.9, ch.10, ch.1, ch.2, ch.3, ch.4, ch.5, ch.6, ch.8
FROM (
  SELECT
    tenant_, server_, tool_, session_, client_,
    -- One tuple per chain started in the hour: (category, declared, expected,
    -- outcome: 0 no_retry, 1 retry_then_fail, 2 retry_then_success; calls;
    -- args changed; first ts_ms; open: its last call, the last one read,
    -- failed at most 60 s before the end of what is read; last ts_ms; first
    -- call_id).
    arrayFilter(
      x -> x.7 >= @hour_s * 1000 AND x.7 < (@hour_s + 3600) * 1000,
      arrayMap(
        (x, s, e, fe, ds, de, xe, le) -> (x.7, x.8, x.9, toUInt8(multiIf(e = s, 0, fe = 1, 1, 2)), toUInt64(e - s + 1), toUInt8(de > ds), x.1,
          toUInt8(le = 1 AND fe = 1 AND xe.1 >= (@hour_s + 4200) * 1000 - 60000), xe.1, x.3),
        arrayFilter((x, s) -> s = 1, c, st),
        arrayFilter((k, s) -> s = 1, arrayEnumerate(c), st),
        arrayFilter((k, e) -> e = 1, arrayEnumerate(c), en),
        arrayFilter((x, e) -> e = 1, f, en),
        arrayFilter((x, s) -> s = 1, dc, st),
        arrayFilter((x, e) -> e = 1, dc, en),
        arrayFilter((x, e) -> e = 1, c, en),
        -- le: the chain's last call is the last call read.
        arrayFilter((l, e) -> e = 1, arrayPushBack(arrayPopFront(arrayMap(x -> toUInt8(0), c)), toUInt8(1)), en))) AS chains_
  FROM (
    -- st: a chain starts; en: a chain ends (the next call is no retry); dc:
    -- retries so far whose args_hash differs from the call before (a chain
    -- changed its arguments iff dc grew between its first and last call).
    SELECT
      tenant_, server_, tool_, session_, client_, c, f,
      arrayMap((fi, ri) -> toUInt8(fi = 1 AND ri = 0), f, r) AS st,
      arrayMap((fi, ri, rn) -> toUInt8((fi = 1 OR ri = 1) AND rn = 0), f, r, arrayPushBack(arrayPopFront(r), toUInt8(0))) AS en,
      arrayCumSum(arrayMap((ri, hc, hp) -> toUInt8(ri = 1 AND hc != hp), r, h, arrayPushFront(arrayPopBack(h), toUInt64(0)))) AS dc
    FROM (
      -- r: a retry (the call before failed, at most the window earlier).
      SELECT
        tenant_, server_, tool_, session_, client_, c, f, h,
        arrayMap((ti, tp, fp) -> toUInt8(fp = 1 AND ti - tp <= 60000), t,
          arrayPushFront(arrayPopBack(t), toInt64(0)), arrayPushFront(arrayPopBack(f), toUInt8(0))) AS r
      FROM (
        -- t, f, h: the ts_ms, is_failure and args_hash of c.
        SELECT tenant_, server_, tool_, session_, client_, c, t, arrayMap(x -> x.5, c) AS f, arrayMap(x -> x.6, c) AS h
        FROM (
          -- c: the sequence without the extra copies of a re-ingested call.
          SELECT tenant_, server_, tool_, session_, client_, arrayFilter((x, k) -> k = 1, c0, keep) AS c, arrayFilter((x, k) -> k = 1, t0, keep) AS t
          FROM (
            -- keep: not a copy (same ts_ms and call_id as the element before;
            -- the latest ingest sorts first).
            SELECT
              tenant_, server_, tool_, session_, client_, c0, t0,
              arrayMap((dt, di) -> bitOr(dt != 0, di != 0),
                arrayPushFront(arrayPopFront(arrayDifference(t0)), 1), arrayPushFront(arrayPopFront(arrayDifference(id0)), 1)) AS keep
            FROM (
              SELECT tenant_, server_, tool_, session_, client_, c0, arrayMap(x -> x.1, c0) AS t0, arrayMap(x -> x.3, c0) AS id0
              FROM (
                SELECT
                  tenant AS tenant_,
                  server AS server_,
                  tool AS tool_,
                  session_key AS session_,
                  min(toString(client)) AS client_,
                  arraySort(groupArray((ts_ms, request_id, call_id, -ingested_ms, is_failure, args_hash, CAST(category AS String), declared_retryable, expected_retryable))) AS c0
                FROM calls
                PREWHERE ts >= toDateTime(@hour_s - 60, 'UTC') AND ts <= toDateTime(@hour_s + 4199, 'UTC')
                  AND ts_ms >= @hour_s * 1000 - 60000
                  AND ts_ms < (@hour_s + 4200) * 1000
                  AND continuation = 0
                  -- Only the groups with a failure in the hour, where its chains start.
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
          )
        )
      )
    )
  )
)
ARRAY JOIN chains_ AS ch
