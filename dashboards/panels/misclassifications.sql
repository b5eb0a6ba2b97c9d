-- Misclassified retryables (docs/analytics.md), as queries/misclassifications.sql
-- computes them for the API, the chain kinds: per tool and category, the
-- classifications that the retry chains started in the range contradict.
-- Chains are cut as in retry_outcomes.sql (60 s retry window). A chain is
-- retried when it has a retry, recovered when it ended with a success, and
-- same-argument when no retry changed the first call's args_hash. Kinds:
-- retryable_never_recovers (declared or expected retryable, retried, fewer
-- than 10 % recovered), non_retryable_recovers (declared or expected not
-- retryable, same-argument retries, at least 50 % recovered),
-- retried_non_retryable (expected not retryable, retried with the same
-- arguments), retried_non_idempotent (first call UPSTREAM_TIMEOUT or
-- UNAVAILABLE, retried, of a tool whose definition in force at the end of
-- the range declares neither idempotentHint nor readOnlyHint; the tools are
-- read from tool_sightings and tool_definitions as in
-- queries/misclassifications.sql, the last two days first, and matched by a
-- hash of tenant, server and tool, which each chain carries instead of the
-- tenant and server names: carried through the array steps, the names cost
-- 18.16 70 ms more with an empty raw range, BENCHMARKS.md, thirty-second
-- round). A row needs min_chains chains; evidence_share is the recovered
-- share of the chains.
-- The panel has two queries, this one (the chain kinds) and
-- misclassifications_misflagged.sql (the misflagged rows), with the same
-- columns; the ClickHouse plugin runs a panel's queries at the same time,
-- and the panel merges their rows (Grafana's merge transformation). As one
-- statement, 18.16 ran the halves one after the other, each leaving a core
-- idle in its single-threaded steps, and 26.7 overlapped them only in part:
-- split, the panel took 31-42 % less on 18.16 and 9-15 % less on 26.7
-- (BENCHMARKS.md, forty-second round).
-- The calls are grouped in an inner query and the chain arrays computed from
-- the group in the outer ones: with the grouping and the lambdas in one
-- SELECT, ClickHouse 26.x evaluated the lambdas for every group before
-- HAVING and took seconds for a few hundred sessions. Each step of the
-- arrays is a subquery of its own, as in queries/retry_outcomes.sql.
-- The chains that start in the hours that the retention job has folded
-- (compact.RollupChains, schema/026_chains_folded.sql) are read from the
-- fold, one row a chain, from the range's first hour up to the first hour
-- without a current chain fold or cut by the range's end (the bound); the
-- chains that start from the bound on are computed from the raw calls, read
-- from 60 s before it (BENCHMARKS.md, thirty-first round: over 24 hours of
-- 10M calls 0.54-0.57 s -> 0.19-0.20 s on 18.16, 0.22-0.27 s -> 0.13-0.15 s
-- on 26.7; docs/dashboards.md). The bound is the dashboard's hidden variable
-- chain_bound (variables/chain_bound.sql), which Grafana computes once
-- before the panels: as a scalar subquery in each of its four places, 18.16
-- ran it again at every nesting level above them, 70 ms a panel
-- (BENCHMARKS.md, thirty-third round). It must be a constant for the server
-- to skip the days before it.
-- The raw read's PREWHERE starts at the bound too, and the set of the
-- groups with a failure is looked up in its WHERE: 18.16 evaluates every
-- PREWHERE condition on every row of the days it reads, and hashed the
-- (tenant, server, session key, tool) of the whole day. Over the 24 hours to
-- noon of 10M calls, the last two hours raw, Misclassified retryables took 18.16
-- 380 -> 344 ms and 26.7 317 -> 308 (BENCHMARKS.md, thirty-eighth round).
-- When every hour of a range that ends on an hour's last second is folded
-- (Grafana's Yesterday and Previous week end so), the bound lies past the
-- range's end and no chain starts from it in the range; the constant
-- condition that the bound is not past the end then lets the server read
-- no raw call. Without it the raw branch read the calls from 60 s before
-- the bound to 600 s after the range: Yesterday over 10M calls took 18.16
-- 210 -> 71 ms for Retry outcomes and 317 -> 194 for Misclassified
-- retryables, 26.7 127 -> 66 and 272 -> 197 (BENCHMARKS.md, thirty-fourth
-- round).
-- A re-ingested call counts once without FINAL: the array step drops the
-- extra copies of a call, keeping its latest ingest, and every lambda takes
-- whole (shifted) arrays instead of indexing a captured one, as in
-- queries/retry_outcomes.sql.
SELECT
  kind_ AS kind,
  tool_name,
  category_name,
  chains_n,
  calls_n,
  recovered_n,
  total_n,
  recovered_n / greatest(total_n, 1) AS evidence_share
FROM (
  SELECT
    k.1 AS kind_,
    CAST(tool_ AS String) AS tool_name,
    CAST(cat_ AS String) AS category_name,
    k.2 AS chains_n,
    k.3 AS calls_n,
    k.4 AS recovered_n,
    k.2 AS total_n
  FROM (
    SELECT
      tool_,
      ch.1 AS cat_,
      -- bitAnd/bitOr, not AND/OR, as in queries/misclassifications.sql: 26.x
      -- evaluates AND/OR lazily, which made the panel 10 % slower with the
      -- string tests, and planned these conditions written with AND/OR in
      -- 70 ms before it read a row (BENCHMARKS.md, thirty-first round).
      toUInt64(countIf(bitAnd(bitOr(ch.2 = 1, ch.3 = 1), ch.4 != 0))) AS rr_chains,
      toUInt64(sumIf(ch.5, bitAnd(bitOr(ch.2 = 1, ch.3 = 1), ch.4 != 0))) AS rr_calls,
      toUInt64(countIf(bitAnd(bitOr(ch.2 = 1, ch.3 = 1), ch.4 = 2))) AS rr_ok,
      toUInt64(countIf(bitAnd(bitOr(ch.2 = 0, ch.3 = 0), bitAnd(ch.4 != 0, ch.6 = 0)))) AS nr_chains,
      toUInt64(sumIf(ch.5, bitAnd(bitOr(ch.2 = 0, ch.3 = 0), bitAnd(ch.4 != 0, ch.6 = 0)))) AS nr_calls,
      toUInt64(countIf(bitAnd(bitOr(ch.2 = 0, ch.3 = 0), bitAnd(ch.4 = 2, ch.6 = 0)))) AS nr_ok,
      toUInt64(countIf(bitAnd(ch.3 = 0, bitAnd(ch.4 != 0, ch.6 = 0)))) AS wr_chains,
      toUInt64(sumIf(ch.5, bitAnd(ch.3 = 0, bitAnd(ch.4 != 0, ch.6 = 0)))) AS wr_calls,
      toUInt64(countIf(bitAnd(ch.3 = 0, bitAnd(ch.4 = 2, ch.6 = 0)))) AS wr_ok,
      toUInt64(countIf(bitAnd(ni_ = 1, bitAnd(bitOr(ch.1 = 'UPSTREAM_TIMEOUT', ch.1 = 'UNAVAILABLE'), ch.4 != 0)))) AS ni_chains,
      toUInt64(sumIf(ch.5, bitAnd(ni_ = 1, bitAnd(bitOr(ch.1 = 'UPSTREAM_TIMEOUT', ch.1 = 'UNAVAILABLE'), ch.4 != 0)))) AS ni_calls,
      toUInt64(countIf(bitAnd(ni_ = 1, bitAnd(bitOr(ch.1 = 'UPSTREAM_TIMEOUT', ch.1 = 'UNAVAILABLE'), ch.4 = 2)))) AS ni_ok
    FROM (
      SELECT
        tool_,
        toUInt8(key_ GLOBAL IN (
          SELECT cityHash64(tenant_d, server_d, tool_d)
          FROM (
            SELECT
              toString(tenant) AS tenant_d,
              toString(server) AS server_d,
              toString(tool) AS tool_d,
              argMax(definition_hash, (ts_ms, definition_hash)) AS hash_d
            FROM tool_sightings
            WHERE ts >= $__toTime - 172800
              AND ts_ms >= (toInt64(toUInt32($__toTime)) - 172800) * 1000
              AND ts_ms < (toInt64(toUInt32($__toTime)) + 1) * 1000
            GROUP BY tenant_d, server_d, tool_d
            UNION ALL
            SELECT
              toString(tenant) AS tenant_d,
              toString(server) AS server_d,
              toString(tool) AS tool_d,
              argMax(definition_hash, (ts_ms, definition_hash)) AS hash_d
            FROM tool_sightings
            WHERE ts <= $__toTime - 172800
              AND ts_ms < (toInt64(toUInt32($__toTime)) - 172800) * 1000
              AND cityHash64(tenant, server, tool) GLOBAL NOT IN (
                SELECT cityHash64(tenant, server, tool)
                FROM tool_sightings
                WHERE ts >= $__toTime - 172800
                  AND ts_ms >= (toInt64(toUInt32($__toTime)) - 172800) * 1000
                  AND ts_ms < (toInt64(toUInt32($__toTime)) + 1) * 1000)
            GROUP BY tenant_d, server_d, tool_d
          )
          WHERE (tenant_d, server_d, tool_d, hash_d) GLOBAL NOT IN (
            SELECT toString(tenant), toString(server), toString(tool), definition_hash
            FROM tool_definitions FINAL
            WHERE idempotent_hint = 1 OR read_only_hint = 1))) AS ni_,
        ch
      FROM (
        SELECT tool AS tool_, cityHash64(tenant, server, tool) AS key_, (CAST(category AS String), declared_retryable, expected_retryable, outcome, attempts, args_changed, start_ms) AS ch
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
        SELECT tool_, key_, ch0 AS ch
        FROM (
          SELECT
            tool_, key_,
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
              tool_, key_, c, f,
              arrayMap((fi, ri) -> toUInt8(fi = 1 AND ri = 0), f, r) AS st,
              arrayMap((fi, ri, rn) -> toUInt8((fi = 1 OR ri = 1) AND rn = 0), f, r, arrayPushBack(arrayPopFront(r), toUInt8(0))) AS en,
              arrayCumSum(arrayMap((ri, hc, hp) -> toUInt8(ri = 1 AND hc != hp), r, h, arrayPushFront(arrayPopBack(h), toUInt64(0)))) AS dc
            FROM (
              -- r: a retry (the call before failed, at most the window earlier).
              SELECT
                tool_, key_, c, f, h,
                arrayMap((ti, tp, fp) -> toUInt8(fp = 1 AND ti - tp <= 60000), t,
                  arrayPushFront(arrayPopBack(t), toInt64(0)), arrayPushFront(arrayPopBack(f), toUInt8(0))) AS r
              FROM (
                -- t, f, h: the ts_ms, is_failure and args_hash of c.
                SELECT tool_, key_, c, t, arrayMap(x -> x.5, c) AS f, arrayMap(x -> x.6, c) AS h
                FROM (
                  -- c: the sequence without the extra copies of a re-ingested call.
                  SELECT tool_, key_, arrayFilter((x, k) -> k = 1, c0, keep) AS c, arrayFilter((x, k) -> k = 1, t0, keep) AS t
                  FROM (
                    -- keep: not a copy (same ts_ms and call_id as the element before;
                    -- the latest ingest sorts first).
                    SELECT
                      tool_, key_, c0, t0,
                      arrayMap((dt, di) -> bitOr(dt != 0, di != 0),
                        arrayPushFront(arrayPopFront(arrayDifference(t0)), 1), arrayPushFront(arrayPopFront(arrayDifference(id0)), 1)) AS keep
                    FROM (
                      SELECT tool_, key_, c0, arrayMap(x -> x.1, c0) AS t0, arrayMap(x -> x.3, c0) AS id0
                      FROM (
                        SELECT
                          tool AS tool_,
                          cityHash64(tenant, server, tool) AS key_,
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
    )
    GROUP BY tool_, cat_
  )
  ARRAY JOIN [
    ('retryable_never_recovers', rr_chains, rr_calls, rr_ok, toUInt8(rr_chains >= ${min_chains} AND 10 * rr_ok < rr_chains)),
    ('non_retryable_recovers', nr_chains, nr_calls, nr_ok, toUInt8(nr_chains >= ${min_chains} AND 2 * nr_ok >= nr_chains)),
    ('retried_non_retryable', wr_chains, wr_calls, wr_ok, toUInt8(wr_chains >= ${min_chains})),
    ('retried_non_idempotent', ni_chains, ni_calls, ni_ok, toUInt8(ni_chains >= ${min_chains}))
  ] AS k
  WHERE k.5 = 1
)
ORDER BY kind, tool_name, category_name
