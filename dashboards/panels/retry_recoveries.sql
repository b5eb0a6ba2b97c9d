-- Retried chains by category and how they ended, split by whether a retry
-- changed the arguments (args_hash differs from the first call's): a
-- recovery that needed new arguments says the error was a correctable
-- one; a same-argument recovery says it was transient. Chains are cut as
-- in retry_outcomes.sql (60 s retry window); chains without a retry are
-- left out.
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
-- noon of 10M calls, the last two hours raw, Recoveries took 18.16
-- 177 -> 155 ms and 26.7 107 -> 99 (BENCHMARKS.md, thirty-eighth round).
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
  ch.1 AS category_,
  countIf(ch.4 != 0) AS retried_n,
  countIf(bitAnd(ch.4 = 2, ch.6 = 0)) AS recovered_same_args_n,
  countIf(bitAnd(ch.4 = 2, ch.6 = 1)) AS recovered_args_changed_n,
  countIf(bitAnd(ch.4 = 1, ch.6 = 0)) AS failed_same_args_n,
  countIf(bitAnd(ch.4 = 1, ch.6 = 1)) AS failed_args_changed_n,
  sumIf(ch.5, ch.4 != 0) / greatest(countIf(ch.4 != 0), 1) AS avg_attempts
FROM (
  SELECT (CAST(category AS String), declared_retryable, expected_retryable, outcome, attempts, args_changed, start_ms) AS ch
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
  SELECT ch0 AS ch
  FROM (
      SELECT
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
          c, f,
          arrayMap((fi, ri) -> toUInt8(fi = 1 AND ri = 0), f, r) AS st,
          arrayMap((fi, ri, rn) -> toUInt8((fi = 1 OR ri = 1) AND rn = 0), f, r, arrayPushBack(arrayPopFront(r), toUInt8(0))) AS en,
          arrayCumSum(arrayMap((ri, hc, hp) -> toUInt8(ri = 1 AND hc != hp), r, h, arrayPushFront(arrayPopBack(h), toUInt64(0)))) AS dc
        FROM (
          -- r: a retry (the call before failed, at most the window earlier).
          SELECT
            c, f, h,
            arrayMap((ti, tp, fp) -> toUInt8(fp = 1 AND ti - tp <= 60000), t,
              arrayPushFront(arrayPopBack(t), toInt64(0)), arrayPushFront(arrayPopBack(f), toUInt8(0))) AS r
          FROM (
            -- t, f, h: the ts_ms, is_failure and args_hash of c.
            SELECT c, t, arrayMap(x -> x.5, c) AS f, arrayMap(x -> x.6, c) AS h
            FROM (
              -- c: the sequence without the extra copies of a re-ingested call.
              SELECT arrayFilter((x, k) -> k = 1, c0, keep) AS c, arrayFilter((x, k) -> k = 1, t0, keep) AS t
              FROM (
                -- keep: not a copy (same ts_ms and call_id as the element before;
                -- the latest ingest sorts first).
                SELECT
                  c0, t0,
                  arrayMap((dt, di) -> bitOr(dt != 0, di != 0),
                    arrayPushFront(arrayPopFront(arrayDifference(t0)), 1), arrayPushFront(arrayPopFront(arrayDifference(id0)), 1)) AS keep
                FROM (
                  SELECT c0, arrayMap(x -> x.1, c0) AS t0, arrayMap(x -> x.3, c0) AS id0
                  FROM (
                    SELECT
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
WHERE ch.4 != 0
GROUP BY category_
ORDER BY retried_n DESC, category_
