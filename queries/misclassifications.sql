-- Misclassified retryables (docs/analytics.md, "Misclassified retryables"):
-- per tool and category, the classifications that the retry chains started
-- in [from, to) contradict. The calls flagged misflagged are the fifth kind,
-- asked in misflagged.sql: queries.Misclassifications runs the two side by
-- side, which 18.16 answers 1.2-1.4x sooner than one UNION ALL of both (3 %
-- of the calls failed; 1.2x at 15 %; BENCHMARKS.md, eleventh round). The
-- innermost query cuts chains exactly as retry_outcomes.sql does, collecting
-- only the groups with a failure (see its comments).
-- Per (tool, category of the first call) it counts four populations of
-- chains: retryable (declared or expected) and retried; not retryable
-- (declared or expected) and retried with the same arguments; expected not
-- retryable and retried with the same arguments; and, for the tools whose
-- definition in force at to declares neither idempotentHint nor
-- readOnlyHint true, retried after an ambiguous failure (UPSTREAM_TIMEOUT or
-- UNAVAILABLE, which includes calls that got no answer: the tool may have
-- run). The definition in force is the one of the tool's latest sighting
-- before to (ties broken by hash, as queries/tool_changes.sql orders them);
-- a tool never sighted has no known definition and is left out. The set is
-- read in SQL, not bound: a fleet's tools could pass max_query_size. Each
-- tool's latest sighting is argMax by (time, hash), which is the row the
-- time-then-hash order puts last; the set is tested in a SELECT of its own
-- above the grouping of the chains, because 18.16 rejects an aggregate
-- function in a subquery inside an aggregating SELECT's expressions
-- ("Unknown identifier"), which made this lookup a sort with LIMIT 1 BY
-- until the thirteenth round (0.13-0.20 s against 0.06-0.08 s for argMax, on
-- both engines; BENCHMARKS.md). Ingest sights every listed tool hourly
-- (-tool-sighting-every) and the table keeps its whole history, so the
-- latest is looked for in the last two days first (sighted_ms), and before
-- them only for the tools without a sighting there (a scan of the older
-- rows' keys): sorting 58 days of sightings of 1,820 tools took 2.2-2.4 s on
-- 18.16 (BENCHMARKS.md, twelfth round). Without FINAL, since a replayed
-- sighting is a copy of its original (time and hash). ARRAY JOIN
-- unfolds the populations into one candidate row per kind, kept when the
-- population has at least min_chains chains and passes the kind's test, in
-- integers (10 * recovered < chains is a share below 10 %; 2 * recovered >=
-- chains is at least 50 %). One scan for the four: the fourth had its own
-- until the eighth round, a second pass over the chains (BENCHMARKS.md).
-- A call ingested more than once counts once, as its latest ingest, without
-- FINAL: the chains drop copies in the array step (see retry_outcomes.sql).
-- Relies on the daily partitions for the time filter and on the (tenant,
-- server, tool) prefix of the sort key for the filters.
-- The chains that start in the hours that the retention job has folded come
-- from the fold, one row a chain, up to @bound_s, and those from it on from
-- the raw calls, as in retry_outcomes.sql (see its comments; with a window
-- other than the fold's, every chain from the raw calls). Each chain
-- carries a hash of its tenant, server and tool for the tools' lookup, as
-- the dashboards' panel does: carried through the array steps, the names
-- cost 18.16 70 ms more (BENCHMARKS.md, thirty-second round).
-- With @by_pair = 1 the rows are per tenant and server as well, their
-- tool the pair's key (retry_outcomes.sql): each population is then a
-- (tenant, server, tool, category)'s, and min_chains applies to it.
SELECT kind, tool, category, chains, calls, recovered, total
FROM (
  SELECT
    k.1 AS kind,
    CAST(tool_ AS String) AS tool,
    CAST(cat_ AS String) AS category,
    k.2 AS chains,
    k.3 AS calls,
    k.4 AS recovered,
    k.2 AS total
  FROM (
    SELECT
      tool_,
      ch.1 AS cat_,
      -- ch: (category, declared, expected, outcome (0 no_retry, 1 retry_then_fail,
      -- 2 retry_then_success), calls, args changed, first ts_ms); ni_: the
      -- chain's tool declares neither hint. The conditions
      -- use bitAnd/bitOr, not AND/OR: modern servers evaluate AND/OR lazily,
      -- which made these aggregates three times slower on 26.7.
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
      -- ni_ here, outside the grouping below: 18.16 rejects an aggregate
      -- function in a subquery of an aggregating SELECT's expressions
      -- ("Unknown identifier"), and the set takes argMax.
      SELECT
        tool_,
        ch,
        toUInt8(key_ GLOBAL IN (
          SELECT cityHash64(tenant_d, server_d, tool_d)
          FROM (
            -- The latest sighting of each tool sighted since sighted_ms
            -- (two days before to),
            SELECT
              toString(tenant) AS tenant_d,
              toString(server) AS server_d,
              toString(tool) AS tool_d,
              argMax(definition_hash, (ts_ms, definition_hash)) AS hash_d
            FROM tool_sightings
            WHERE ts >= toDateTime(@sighted_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
              AND ts_ms >= @sighted_ms AND ts_ms < @to_ms
            GROUP BY tenant_d, server_d, tool_d
            UNION ALL
            -- and of each tool not sighted since, its latest before.
            SELECT
              toString(tenant) AS tenant_d,
              toString(server) AS server_d,
              toString(tool) AS tool_d,
              argMax(definition_hash, (ts_ms, definition_hash)) AS hash_d
            FROM tool_sightings
            WHERE ts <= toDateTime(@sighted_s, 'UTC') AND ts_ms < @sighted_ms
              AND cityHash64(tenant, server, tool) GLOBAL NOT IN (
                SELECT cityHash64(tenant, server, tool)
                FROM tool_sightings
                WHERE ts >= toDateTime(@sighted_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
                  AND ts_ms >= @sighted_ms AND ts_ms < @to_ms)
            GROUP BY tenant_d, server_d, tool_d
          )
          WHERE (tenant_d, server_d, tool_d, hash_d) GLOBAL NOT IN (
            SELECT toString(tenant), toString(server), toString(tool), definition_hash
            FROM tool_definitions FINAL
            WHERE idempotent_hint = 1 OR read_only_hint = 1))) AS ni_
      FROM (
        -- Fold branch: the chains of the folded hours, one row each
        -- (Misclassifications leaves this branch out, to its UNION ALL, when
        -- no hour of the range is folded: queries.withoutFold).
        SELECT if(@by_pair = 1, concat(toString(length(toString(tenant))), ':', toString(tenant), toString(length(toString(server))), ':', toString(server), toString(tool)), toString(tool)) AS tool_, cityHash64(tenant, server, tool) AS key_, (CAST(category AS String), declared_retryable, expected_retryable, outcome, attempts, args_changed, start_ms) AS ch
        FROM chains_folded
        PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM chain_current_folds)
        WHERE hour >= toDateTime(@from_hour_s, 'UTC') AND hour < toDateTime(@bound_s, 'UTC')
          AND start_ms >= @from_ms AND start_ms < @to_ms
          AND (@tenant = '' OR tenant = @tenant)
          AND (@all_tenants = 1 OR has(@tenants, tenant))
          AND (@server = '' OR server = @server)
          AND (@tool = '' OR tool = @tool)
        UNION ALL
        SELECT tool_, key_, ch0 AS ch
        FROM (
            SELECT
              tool_,
              key_,
              -- One tuple per chain started in range: (category, declared, expected,
              -- outcome: 0 no_retry, 1 retry_then_fail, 2 retry_then_success; calls;
              -- args changed; first ts_ms).
              arrayFilter(
                x -> x.7 >= @raw_from_ms AND x.7 < @to_ms,
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
                  arrayMap((ti, tp, fp) -> toUInt8(fp = 1 AND ti - tp <= @window_ms), t,
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
                            if(@by_pair = 1, concat(toString(length(toString(tenant))), ':', toString(tenant), toString(length(toString(server))), ':', toString(server), toString(tool)), toString(tool)) AS tool_,
                            cityHash64(tenant, server, tool) AS key_,
                            arraySort(groupArray((ts_ms, request_id, call_id, -ingested_ms, is_failure, args_hash, CAST(category AS String), declared_retryable, expected_retryable))) AS c0
                          FROM calls
                          PREWHERE ts >= toDateTime(@lo_s, 'UTC') AND ts <= toDateTime(@hi_s, 'UTC')
                            AND ts_ms >= @lo_ms AND ts_ms < @hi_ms
                            AND continuation = 0
                            AND (@tenant = '' OR tenant = @tenant)
                            AND (@all_tenants = 1 OR has(@tenants, tenant))
                            AND (@server = '' OR server = @server)
                            AND (@tool = '' OR tool = @tool)
                          -- Only the groups with a failure: their hashes first, from the failed
                          -- calls alone (see the header), looked up in WHERE.
                          WHERE cityHash64(tenant, server, session_key, tool) GLOBAL IN (
                              SELECT cityHash64(tenant, server, session_key, tool)
                              FROM calls
                              WHERE ts >= toDateTime(@lo_s, 'UTC') AND ts <= toDateTime(@hi_s, 'UTC')
                                AND ts_ms >= @lo_ms AND ts_ms < @hi_ms
                                AND continuation = 0
                                AND is_failure = 1
                                AND (@tenant = '' OR tenant = @tenant)
                                AND (@all_tenants = 1 OR has(@tenants, tenant))
                                AND (@server = '' OR server = @server)
                                AND (@tool = '' OR tool = @tool))
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
    )
    GROUP BY tool_, cat_
  )
  ARRAY JOIN [
    ('retryable_never_recovers', rr_chains, rr_calls, rr_ok, toUInt8(rr_chains >= @min_chains AND 10 * rr_ok < rr_chains)),
    ('non_retryable_recovers', nr_chains, nr_calls, nr_ok, toUInt8(nr_chains >= @min_chains AND 2 * nr_ok >= nr_chains)),
    ('retried_non_retryable', wr_chains, wr_calls, wr_ok, toUInt8(wr_chains >= @min_chains)),
    ('retried_non_idempotent', ni_chains, ni_calls, ni_ok, toUInt8(ni_chains >= @min_chains))
  ] AS k
  WHERE k.5 = 1
)
ORDER BY kind, tool, category
