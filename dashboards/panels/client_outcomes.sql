-- Retry outcomes by client (GET /api/v1/retry-outcomes?by=client summed
-- over tools and categories; docs/analytics.md, "Retry chains"): per client
-- (its clientInfo name, the least of its sequence's calls', '' where none was
-- captured), the retry chains that started in the range and how they ended:
-- whose retries recover, whose keep failing, who does not retry at all. The
-- chains are cut exactly as in panels/retry_outcomes.sql (per tenant,
-- server, session key and tool, continuations left out; a call is a retry
-- when the call before it failed at most 60 s earlier), the folded hours'
-- from the chain fold, which keeps each chain's client
-- (schema/036_chains_folded_client.sql), up to the hidden variable
-- chain_bound, and the rest from the raw calls read from 60 s before the
-- bound, with the same guard and set lookup as that panel (see its header).
-- A re-ingested call counts once without FINAL: the array step drops the
-- extra copies of a call, keeping its latest ingest.
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
  SELECT CAST(client AS String) AS client_, (CAST(category AS String), declared_retryable, expected_retryable, outcome, attempts, args_changed, start_ms) AS ch
  FROM chains_folded
  PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM chain_current_folds)
  WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600)
    AND hour < toDateTime(${chain_bound})
    AND start_ms >= toInt64(toUInt32($__fromTime)) * 1000
    AND start_ms < (toInt64(toUInt32($__toTime)) + 1) * 1000
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  UNION ALL
  SELECT client_, ch0 AS ch
  FROM (
      SELECT
        client_,
        -- One tuple per chain started in range: (category, declared, expected,
        -- outcome: 0 no_retry, 1 retry_then_fail, 2 retry_then_success; calls;
        -- args changed; first ts_ms).
        arrayFilter(
          x -> x.7 >= toInt64(toUInt32($__fromTime)) * 1000 AND x.7 < (toInt64(toUInt32($__toTime)) + 1) * 1000,
          arrayMap(
            (x, s, e, fe, ds, de) -> (x.7, x.8, x.9, toUInt8(multiIf(e = s, 0, fe = 1, 1, 2)), toUInt64(e - s + 1), toUInt8(de > ds), x.1),
            arrayFilter((x, s) -> s = 1, c, st),
            arrayFilter((k, s) -> s = 1, arrayEnumerate(c), st),
            arrayFilter((k, e) -> e = 1, arrayEnumerate(c), en),
            arrayFilter((x, e) -> e = 1, f, en),
            arrayFilter((x, s) -> s = 1, dc, st),
            arrayFilter((x, e) -> e = 1, dc, en))) AS chains_
      FROM (
        -- st: a chain starts; en: a chain ends (the next call is no retry); dc:
        -- retries so far whose args_hash differs from the call before (a chain
        -- changed its arguments iff dc grew between its first and last call).
        SELECT
          client_, c, f,
          arrayMap((fi, ri) -> toUInt8(fi = 1 AND ri = 0), f, r) AS st,
          arrayMap((fi, ri, rn) -> toUInt8((fi = 1 OR ri = 1) AND rn = 0), f, r, arrayPushBack(arrayPopFront(r), toUInt8(0))) AS en,
          arrayCumSum(arrayMap((ri, hc, hp) -> toUInt8(ri = 1 AND hc != hp), r, h, arrayPushFront(arrayPopBack(h), toUInt64(0)))) AS dc
        FROM (
          -- r: a retry (the call before failed, at most the window earlier).
          SELECT
            client_, c, f, h,
            arrayMap((ti, tp, fp) -> toUInt8(fp = 1 AND ti - tp <= 60000), t,
              arrayPushFront(arrayPopBack(t), toInt64(0)), arrayPushFront(arrayPopBack(f), toUInt8(0))) AS r
          FROM (
            -- t, f, h: the ts_ms, is_failure and args_hash of c.
            SELECT client_, c, t, arrayMap(x -> x.5, c) AS f, arrayMap(x -> x.6, c) AS h
            FROM (
              -- c: the sequence without the extra copies of a re-ingested call.
              SELECT client_, arrayFilter((x, k) -> k = 1, c0, keep) AS c, arrayFilter((x, k) -> k = 1, t0, keep) AS t
              FROM (
                -- keep: not a copy (same ts_ms and call_id as the element before;
                -- the latest ingest sorts first).
                SELECT
                  client_, c0, t0,
                  arrayMap((dt, di) -> bitOr(dt != 0, di != 0),
                    arrayPushFront(arrayPopFront(arrayDifference(t0)), 1), arrayPushFront(arrayPopFront(arrayDifference(id0)), 1)) AS keep
                FROM (
                  SELECT client_, c0, arrayMap(x -> x.1, c0) AS t0, arrayMap(x -> x.3, c0) AS id0
                  FROM (
                    SELECT
                      min(toString(client)) AS client_,
                      arraySort(groupArray((ts_ms, request_id, call_id, -ingested_ms, is_failure, args_hash, CAST(category AS String), declared_retryable, expected_retryable))) AS c0
                    FROM calls
                    PREWHERE ts >= $__fromTime - 60 AND ts >= toDateTime(${chain_bound}) - 60 AND ts <= $__toTime + 600
                      AND ts_ms >= toInt64(toUInt32($__fromTime)) * 1000 - 60000
                      AND ts_ms < (toInt64(toUInt32($__toTime)) + 1) * 1000 + 600000
                      AND continuation = 0
                      AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
                      AND $__conditionalAll(server IN (${server:singlequote}), $server)
                      AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
                    WHERE ts >= toDateTime(${chain_bound}) - 60
                      AND toDateTime(${chain_bound}) <= $__toTime
                      -- Only the groups with a failure (queries/retry_outcomes.sql), in the
                      -- WHERE (see the header).
                      AND cityHash64(tenant, server, session_key, tool) GLOBAL IN (
                        SELECT cityHash64(tenant, server, session_key, tool)
                        FROM calls
                        WHERE ts >= toDateTime(${chain_bound}) - 60 AND ts <= $__toTime + 600
                          AND toDateTime(${chain_bound}) <= $__toTime
                          AND ts_ms >= toInt64(toUInt32($__fromTime)) * 1000 - 60000
                          AND ts_ms < (toInt64(toUInt32($__toTime)) + 1) * 1000 + 600000
                          AND continuation = 0
                          AND is_failure = 1
                          AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
                          AND $__conditionalAll(server IN (${server:singlequote}), $server)
                          AND $__conditionalAll(tool IN (${tool:singlequote}), $tool))
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
  WHERE ch0.7 >= toInt64(${chain_bound}) * 1000
)
GROUP BY client_name
ORDER BY chains_n DESC, client_name
