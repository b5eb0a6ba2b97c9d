-- Retry loops (docs/analytics.md, "Retry loops"), as the panel computed
-- them from the raw calls before it read the chain fold: the 50 longest
-- retry chains that started in the range with at least 5 calls, one row a
-- chain, cut as in queries/retry_outcomes.sql from every call once, as its
-- latest ingest (FINAL), read from 60 s before the range to 600 s after it.
SELECT
  toDateTime(intDiv(ch.1, 1000), 'UTC') AS started,
  tenant_ AS tenant_name,
  server_ AS server_name,
  tool_ AS tool_name,
  session_ AS session,
  client_ AS client_name,
  ch.3 AS attempts_n,
  if(ch.4 = 2, 'retry_then_success', 'retry_then_fail') AS outcome_,
  if(ch.5 = 1, 'changed', 'same') AS arguments_,
  ch.6 AS category_,
  multiIf(ch.8 = 1, 'yes', ch.8 = 0, 'no', 'unknown') AS expected_retryable_,
  (ch.2 - ch.1) / 1000 AS duration_s
FROM (
  SELECT tenant_, server_, session_, tool_, client_, ch0 AS ch
  FROM (
    SELECT
      tenant_, server_, session_, tool_, client_,
      -- One tuple per chain started in range with at least 5 calls: (first
      -- ts_ms, last ts_ms, calls, outcome: 1 retry_then_fail, 2
      -- retry_then_success, args changed, category, declared, expected).
      arrayFilter(
        x -> x.1 >= toInt64(toUInt32($__fromTime)) * 1000 AND x.1 < (toInt64(toUInt32($__toTime)) + 1) * 1000 AND x.3 >= 5,
        arrayMap(
          (x, s, e, fe, ds, de, xe) -> (x.1, xe.1, toUInt64(e - s + 1), toUInt8(multiIf(e = s, 0, fe = 1, 1, 2)), toUInt8(de > ds), x.7, x.8, x.9),
          arrayFilter((x, s) -> s = 1, c, st),
          arrayFilter((k, s) -> s = 1, arrayEnumerate(c), st),
          arrayFilter((k, e) -> e = 1, arrayEnumerate(c), en),
          arrayFilter((x, e) -> e = 1, f, en),
          arrayFilter((x, s) -> s = 1, dc, st),
          arrayFilter((x, e) -> e = 1, dc, en),
          arrayFilter((x, e) -> e = 1, c, en))) AS chains_
    FROM (
      -- st: a chain starts; en: a chain ends (the next call is no retry); dc:
      -- retries so far whose args_hash differs from the call before (a chain
      -- changed its arguments iff dc grew between its first and last call).
      SELECT
        tenant_, server_, session_, tool_, client_, c, f,
        arrayMap((fi, ri) -> toUInt8(fi = 1 AND ri = 0), f, r) AS st,
        arrayMap((fi, ri, rn) -> toUInt8((fi = 1 OR ri = 1) AND rn = 0), f, r, arrayPushBack(arrayPopFront(r), toUInt8(0))) AS en,
        arrayCumSum(arrayMap((ri, hc, hp) -> toUInt8(ri = 1 AND hc != hp), r, h, arrayPushFront(arrayPopBack(h), toUInt64(0)))) AS dc
      FROM (
        -- r: a retry (the call before failed, at most the window earlier).
        SELECT
          tenant_, server_, session_, tool_, client_, c, f, h,
          arrayMap((ti, tp, fp) -> toUInt8(fp = 1 AND ti - tp <= 60000), t,
            arrayPushFront(arrayPopBack(t), toInt64(0)), arrayPushFront(arrayPopBack(f), toUInt8(0))) AS r
        FROM (
          -- t, f, h: the ts_ms, is_failure and args_hash of c.
          SELECT tenant_, server_, session_, tool_, client_, c, t, arrayMap(x -> x.5, c) AS f, arrayMap(x -> x.6, c) AS h
          FROM (
            -- c: the sequence without the extra copies of a re-ingested call.
            SELECT tenant_, server_, session_, tool_, client_, arrayFilter((x, k) -> k = 1, c0, keep) AS c, arrayFilter((x, k) -> k = 1, t0, keep) AS t
            FROM (
              -- keep: not a copy (same ts_ms and call_id as the element before;
              -- the latest ingest sorts first).
              SELECT
                tenant_, server_, session_, tool_, client_, c0, t0,
                arrayMap((dt, di) -> bitOr(dt != 0, di != 0),
                  arrayPushFront(arrayPopFront(arrayDifference(t0)), 1), arrayPushFront(arrayPopFront(arrayDifference(id0)), 1)) AS keep
              FROM (
                SELECT tenant_, server_, session_, tool_, client_, c0, arrayMap(x -> x.1, c0) AS t0, arrayMap(x -> x.3, c0) AS id0
                FROM (
                  SELECT
                    toString(tenant) AS tenant_,
                    toString(server) AS server_,
                    session_key AS session_,
                    toString(tool) AS tool_,
                    min(toString(client)) AS client_,
                    arraySort(groupArray((ts_ms, request_id, call_id, -ingested_ms, is_failure, args_hash, CAST(category AS String), declared_retryable, expected_retryable))) AS c0
                  FROM calls FINAL
                  PREWHERE ts >= $__fromTime - 60 AND ts <= $__toTime + 600
                    AND ts_ms >= toInt64(toUInt32($__fromTime)) * 1000 - 60000
                    AND ts_ms < (toInt64(toUInt32($__toTime)) + 1) * 1000 + 600000
                    AND continuation = 0
                    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
                    AND $__conditionalAll(server IN (${server:singlequote}), $server)
                    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
                  -- Only the groups with 4 failed calls or more: their hashes
                  -- first, from the failed calls alone, looked up in WHERE
                  -- (queries/retry_outcomes.sql).
                  WHERE cityHash64(tenant, server, session_key, tool) GLOBAL IN (
                      SELECT cityHash64(tenant, server, session_key, tool) AS group_
                      FROM calls FINAL
                      WHERE ts >= $__fromTime - 60 AND ts <= $__toTime + 600
                        AND ts_ms >= toInt64(toUInt32($__fromTime)) * 1000 - 60000
                        AND ts_ms < (toInt64(toUInt32($__toTime)) + 1) * 1000 + 600000
                        AND continuation = 0
                        AND is_failure = 1
                        AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
                        AND $__conditionalAll(server IN (${server:singlequote}), $server)
                        AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
                      GROUP BY group_
                      HAVING count() >= 4)
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
  ARRAY JOIN chains_ AS ch0
)
ORDER BY attempts_n DESC, ch.1 DESC, tenant_name, server_name, session, tool_name
LIMIT 50
