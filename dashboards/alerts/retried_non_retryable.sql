-- Alert MCPRetriedNonRetryable: per tenant, server, tool and category, the
-- chains whose first call was expected not retryable and that were retried
-- with unchanged arguments; the rule fires at 5 (the API's min_chains), the
-- retried_non_retryable kind of queries/misclassifications.sql. The chains are
-- cut as in queries/retry_outcomes.sql: per tenant, server, session key and
-- tool, continuations left out, calls ordered by (ts_ms, request_id, call_id);
-- a call is a retry when the call before it failed at most 60 s earlier; a
-- chain starts at a failed call that is not a retry and is retried when it has
-- a retry, recovered when it ends with a success, same-argument when no retry
-- changed the first call's args_hash. Chains started in the rule's range (24
-- hours, the API's default window) count; calls are read from one window
-- before it.
-- The calls are grouped in an inner query and the chain arrays computed from
-- the group in the outer ones: with the grouping and the lambdas in one
-- SELECT, ClickHouse 26.x evaluated the lambdas for every group before
-- HAVING and took seconds for a few hundred sessions. Each step of the
-- arrays is a subquery of its own, as in queries/retry_outcomes.sql.
-- A re-ingested call counts once without FINAL: the array step drops the
-- extra copies of a call, keeping its latest ingest, and every lambda takes
-- whole (shifted) arrays instead of indexing a captured one, as in
-- queries/retry_outcomes.sql.
-- The chains that start in the hours that the retention job has folded
-- (compact.RollupChains, schema/026_chains_folded.sql) are read from the
-- fold, one row a chain, from the range's first hour up to the first hour
-- without a current chain fold (the bound); the chains that start from the
-- bound on are computed from the raw calls, read from 60 s before it with
-- the time conditions in PREWHERE, as the chain panels do. A rule has no
-- dashboard variables, so the bound is a scalar subquery over
-- chain_current_folds (the panels' variables/chain_bound.sql), written out in
-- each of its four places. Over the 24 hours to noon of 10M calls, the last
-- two hours raw: 18.16 0.61-0.69 s -> 0.31-0.33 s, 26.7 0.29-0.44 s ->
-- 0.18-0.19 s; with nothing folded (a new install before the job's first
-- run) the bound is the range's first hour and the rule reads every call,
-- as before, plus the bound's cost (18.16 14-33 ms; BENCHMARKS.md, fortieth
-- round).
SELECT
  tenant_name,
  server_name,
  tool_name,
  category_name,
  wr_chains AS retried_chains
FROM (
  SELECT
    tenant_name,
    server_name,
    tool_name,
    ch.1 AS category_name,
    -- bitAnd/bitOr, not AND/OR: 26.x plans these faster (the misclassified
    -- retryables panel, BENCHMARKS.md, thirty-first round).
    toUInt64(countIf(bitAnd(bitOr(ch.2 = 1, ch.3 = 1), ch.4 != 0))) AS rr_chains,
    toUInt64(countIf(bitAnd(bitOr(ch.2 = 1, ch.3 = 1), ch.4 = 2))) AS rr_ok,
    toUInt64(countIf(bitAnd(bitOr(ch.2 = 0, ch.3 = 0), bitAnd(ch.4 != 0, ch.6 = 0)))) AS nr_chains,
    toUInt64(countIf(bitAnd(bitOr(ch.2 = 0, ch.3 = 0), bitAnd(ch.4 = 2, ch.6 = 0)))) AS nr_ok,
    toUInt64(countIf(bitAnd(ch.3 = 0, bitAnd(ch.4 != 0, ch.6 = 0)))) AS wr_chains
  FROM (
    SELECT
      toString(tenant) AS tenant_name,
      toString(server) AS server_name,
      toString(tool) AS tool_name,
      (CAST(category AS String), declared_retryable, expected_retryable, outcome, attempts, args_changed, start_ms) AS ch
    FROM chains_folded
    PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM chain_current_folds)
    WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600)
      AND hour < toDateTime((
        SELECT least(intDiv(toUInt32($__toTime) + 1, 3600) * 3600, intDiv(toUInt32($__fromTime), 3600) * 3600 + 3600 * if(i = 0, length(hs), toUInt64(i - 1)))
        FROM (
          SELECT
            arraySort(groupArray(toUInt32(hour))) AS hs,
            arrayFirstIndex((h, k) -> h != intDiv(toUInt32($__fromTime), 3600) * 3600 + 3600 * (k - 1), hs, arrayEnumerate(hs)) AS i
          FROM chain_current_folds
          WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour < toDateTime(intDiv(toUInt32($__toTime) + 1, 3600) * 3600))))
      AND start_ms >= toInt64(toUInt32($__fromTime)) * 1000
    UNION ALL
    SELECT tenant_name, server_name, tool_name, ch0 AS ch
    FROM (
      SELECT
        tenant_name,
        server_name,
        tool_name,
        -- One tuple per chain started in range: (category, declared, expected,
        -- outcome: 0 no_retry, 1 retry_then_fail, 2 retry_then_success; calls;
        -- args changed; first ts_ms).
        arrayFilter(
          x -> x.7 >= toInt64(toUInt32($__fromTime)) * 1000,
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
          tenant_name, server_name, tool_name, c, f,
          arrayMap((fi, ri) -> toUInt8(fi = 1 AND ri = 0), f, r) AS st,
          arrayMap((fi, ri, rn) -> toUInt8((fi = 1 OR ri = 1) AND rn = 0), f, r, arrayPushBack(arrayPopFront(r), toUInt8(0))) AS en,
          arrayCumSum(arrayMap((ri, hc, hp) -> toUInt8(ri = 1 AND hc != hp), r, h, arrayPushFront(arrayPopBack(h), toUInt64(0)))) AS dc
        FROM (
          -- r: a retry (the call before failed, at most the window earlier).
          SELECT
            tenant_name, server_name, tool_name, c, f, h,
            arrayMap((ti, tp, fp) -> toUInt8(fp = 1 AND ti - tp <= 60000), t,
              arrayPushFront(arrayPopBack(t), toInt64(0)), arrayPushFront(arrayPopBack(f), toUInt8(0))) AS r
          FROM (
            -- t, f, h: the ts_ms, is_failure and args_hash of c.
            SELECT tenant_name, server_name, tool_name, c, t, arrayMap(x -> x.5, c) AS f, arrayMap(x -> x.6, c) AS h
            FROM (
              -- c: the sequence without the extra copies of a re-ingested call.
              SELECT tenant_name, server_name, tool_name, arrayFilter((x, k) -> k = 1, c0, keep) AS c, arrayFilter((x, k) -> k = 1, t0, keep) AS t
              FROM (
                -- keep: not a copy (same ts_ms and call_id as the element before;
                -- the latest ingest sorts first).
                SELECT
                  tenant_name, server_name, tool_name, c0, t0,
                  arrayMap((dt, di) -> bitOr(dt != 0, di != 0),
                    arrayPushFront(arrayPopFront(arrayDifference(t0)), 1), arrayPushFront(arrayPopFront(arrayDifference(id0)), 1)) AS keep
                FROM (
                  SELECT tenant_name, server_name, tool_name, c0, arrayMap(x -> x.1, c0) AS t0, arrayMap(x -> x.3, c0) AS id0
                  FROM (
                    SELECT
                      toString(tenant) AS tenant_name,
                      toString(server) AS server_name,
                      toString(tool) AS tool_name,
                      arraySort(groupArray((ts_ms, request_id, call_id, -ingested_ms, is_failure, args_hash, CAST(category AS String), declared_retryable, expected_retryable))) AS c0
                    FROM calls
                    PREWHERE ts >= $__fromTime - 60 AND ts >= toDateTime((
                        SELECT least(intDiv(toUInt32($__toTime) + 1, 3600) * 3600, intDiv(toUInt32($__fromTime), 3600) * 3600 + 3600 * if(i = 0, length(hs), toUInt64(i - 1)))
                        FROM (
                          SELECT
                            arraySort(groupArray(toUInt32(hour))) AS hs,
                            arrayFirstIndex((h, k) -> h != intDiv(toUInt32($__fromTime), 3600) * 3600 + 3600 * (k - 1), hs, arrayEnumerate(hs)) AS i
                          FROM chain_current_folds
                          WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour < toDateTime(intDiv(toUInt32($__toTime) + 1, 3600) * 3600)))) - 60 AND ts <= $__toTime
                      AND continuation = 0
                    -- Only the groups with a failure (queries/retry_outcomes.sql).
                    WHERE cityHash64(tenant, server, session_key, tool) GLOBAL IN (
                        SELECT cityHash64(tenant, server, session_key, tool)
                        FROM calls
                        PREWHERE ts >= $__fromTime - 60 AND ts >= toDateTime((
                            SELECT least(intDiv(toUInt32($__toTime) + 1, 3600) * 3600, intDiv(toUInt32($__fromTime), 3600) * 3600 + 3600 * if(i = 0, length(hs), toUInt64(i - 1)))
                            FROM (
                              SELECT
                                arraySort(groupArray(toUInt32(hour))) AS hs,
                                arrayFirstIndex((h, k) -> h != intDiv(toUInt32($__fromTime), 3600) * 3600 + 3600 * (k - 1), hs, arrayEnumerate(hs)) AS i
                              FROM chain_current_folds
                              WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour < toDateTime(intDiv(toUInt32($__toTime) + 1, 3600) * 3600)))) - 60 AND ts <= $__toTime
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
    ARRAY JOIN chains_ AS ch0
    WHERE ch0.7 >= toInt64((
      SELECT least(intDiv(toUInt32($__toTime) + 1, 3600) * 3600, intDiv(toUInt32($__fromTime), 3600) * 3600 + 3600 * if(i = 0, length(hs), toUInt64(i - 1)))
      FROM (
        SELECT
          arraySort(groupArray(toUInt32(hour))) AS hs,
          arrayFirstIndex((h, k) -> h != intDiv(toUInt32($__fromTime), 3600) * 3600 + 3600 * (k - 1), hs, arrayEnumerate(hs)) AS i
        FROM chain_current_folds
        WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour < toDateTime(intDiv(toUInt32($__toTime) + 1, 3600) * 3600)))) * 1000
  )
  GROUP BY tenant_name, server_name, tool_name, category_name
)
WHERE wr_chains > 0
ORDER BY tenant_name, server_name, tool_name, category_name
