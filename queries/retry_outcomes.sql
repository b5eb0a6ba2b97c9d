-- Retry outcomes (docs/analytics.md, "Retry chains"): per tool, category and
-- retryability of a chain's first call, how the retry chains started in
-- [from, to) ended. The calls of one (tenant, server, session_key, tool),
-- continuations left out, are ordered by (ts_ms, request_id, call_id); a call
-- is a retry when the call before it failed and came at most window_ms
-- earlier. A chain starts at a failed call that is not a retry and ends at
-- the last call before the next non-retry, so at its first non-failed retry.
--
-- The array form of the reference note (section 8.2), with every lambda
-- over whole arrays passed as arguments (shifted copies for the previous and
-- next call), never indexing a captured array: a captured array is copied
-- once per element, which made the first version quadratic in the length of
-- a session. Each step of the arrays is a subquery of its own, whose
-- columns the next step reads: as aliases of one SELECT, ClickHouse 26.x's
-- analyzer copied each alias's expression into every use of it, nested
-- aliases into each other, and took 70 ms to plan the dashboards' retry
-- outcomes before reading a row, against 43 ms staged (the misclassified
-- retryables panel went from 738 to 477 ms over 24 hours of 10M calls;
-- BENCHMARKS.md, thirty-first round). The grouping is a subquery too: with
-- it in the same SELECT as the lambdas, 26.x evaluated the lambdas for
-- every group before HAVING. Calls are read from one window before from
-- (the call before a call in range decides whether it is a retry) to the
-- chain horizon after to (hi_ms). A re-ingested call counts once without
-- FINAL: the array step drops copies with the same ts_ms and call_id as the
-- element before, keeping the largest ingested_ms (it sorts first, negated),
-- the copy FINAL would keep; copies share every column the WHERE clause and
-- the grouping read. FINAL doubled the time of this query on both engines
-- (BENCHMARKS.md). The category is cast to String before it enters the
-- tuple: 18.16 collected LowCardinality tuple elements much more slowly.
-- Only the groups that hold a failure are collected: the WHERE clause keeps
-- the calls whose cityHash64 of (tenant, server, session_key, tool) is one of
-- the failed calls', read first from the failed calls alone (a small part of
-- the range in a healthy fleet), and HAVING keeps the answer exact when two
-- groups share a hash. Without it every call of the range was grouped and
-- collected, and the groups without a failure thrown away after
-- (BENCHMARKS.md, ninth round). The other conditions are the PREWHERE: as
-- a WHERE, which 18.16 does not move to PREWHERE because of the subquery,
-- they read 223 MiB of 24 hours of 10M calls instead of 129, and 26.7,
-- which moves them itself, answers as fast either way (BENCHMARKS.md,
-- twenty-ninth round). The set is looked up in the WHERE, on the rows of
-- the time window only: in the PREWHERE 18.16, which evaluates every
-- PREWHERE condition on every row of the days it reads, hashed every call
-- of those days (over the last two hours of a merged day of 10M calls
-- 200 -> 168 ms; over 24 hours raw 790 -> 736; 26.7 131 -> 129 and
-- 492 -> 376: BENCHMARKS.md, thirty-eighth round).
-- Relies on the daily partitions for the time filter and on the (tenant,
-- server, tool) prefix of the sort key for the filters.
-- The chains that start in the hours that the retention job has folded
-- (compact.RollupChains, schema/026_chains_folded.sql, with the default
-- 60 s window) are read from the fold, one row a chain, from the hour the
-- range starts in up to @bound_s, the first hour without a current chain
-- fold or the hour the range ends in (chain_fold_hours.sql, asked first by
-- queries.RetryOutcomes); the chains that start from it on are computed
-- from the raw calls, read from one window before it (@lo_ms), and counted
-- from @raw_from_ms, the later of from and the bound. With another window
-- the bound is the range's first hour, and every chain comes from the raw
-- calls. Every chain from the raw calls took 0.58-0.75 s over 24 hours of
-- 10M calls on 18.16 and 5-6 s over 7 days (26.7: 0.29 s and 1.3 s); with
-- the fold 0.12-0.19 s and 0.24 s (26.7: 0.06-0.09 s and 0.12 s), the
-- bound's query 9-12 ms more (BENCHMARKS.md, thirty-sixth round). The
-- dashboards' chain panels read the fold since the thirty-first.
-- With @by_pair = 1 the rows are per tenant and server as well: each
-- chain's tool_ is then the key "<bytes of tenant>:<tenant><bytes of
-- server>:<server><tool>" (queries.splitPairKey reads it back), which the
-- api's gauges ask for every pair in one statement (package gauges); with
-- 0 it is the tool. As a tuple (tenant, server, tool) the key cost 26.7
-- about 10 ms more of planning (BENCHMARKS.md, thirty-ninth round).
-- With @by_client = 1 the rows are per client as well, their tool
-- "<bytes of client>:<client><tool>" (queries.splitClientKey), a chain's
-- client the least clientInfo name of its group's calls (the fold keeps
-- the same, schema/036_chains_folded_client.sql; recalls.sql takes a
-- failure's the same way). Without @by_client, RetryOutcomes runs this
-- statement without the client's columns and key branches
-- (queries.withoutClient), so that 18.16 does not read the column.
SELECT
  tool_ AS tool,
  ch.1 AS category,
  ch.2 AS declared_retryable,
  ch.3 AS expected_retryable,
  toUInt64(count()) AS chains,
  toUInt64(countIf(ch.4 = 2)) AS retry_then_success,
  toUInt64(countIf(ch.4 = 1)) AS retry_then_fail,
  toUInt64(countIf(ch.4 = 0)) AS no_retry,
  toUInt64(sum(ch.5)) AS attempts,
  toUInt64(countIf(ch.6 = 1)) AS args_changed_chains
FROM (
  -- Fold branch: the chains of the folded hours, one row each
  -- (RetryOutcomes leaves this branch out, to its UNION ALL, when no hour of
  -- the range is folded: queries.withoutFold).
  SELECT tool_, ch
  FROM (
    SELECT
      CAST(client AS String) AS client_,
      multiIf(@by_client = 1, concat(toString(length(client_)), ':', client_, toString(tool)),
        @by_pair = 1, concat(toString(length(toString(tenant))), ':', toString(tenant), toString(length(toString(server))), ':', toString(server), toString(tool)),
        toString(tool)) AS tool_,
      (CAST(category AS String), declared_retryable, expected_retryable, outcome, attempts, args_changed, start_ms) AS ch
    FROM chains_folded
    PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM chain_current_folds)
    WHERE hour >= toDateTime(@from_hour_s, 'UTC') AND hour < toDateTime(@bound_s, 'UTC')
      AND start_ms >= @from_ms AND start_ms < @to_ms
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND (@server = '' OR server = @server)
      AND (@tool = '' OR tool = @tool))
  UNION ALL
  SELECT tool_, ch0 AS ch
  FROM (
    SELECT
      tool_,
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
        tool_, c, f,
        arrayMap((fi, ri) -> toUInt8(fi = 1 AND ri = 0), f, r) AS st,
        arrayMap((fi, ri, rn) -> toUInt8((fi = 1 OR ri = 1) AND rn = 0), f, r, arrayPushBack(arrayPopFront(r), toUInt8(0))) AS en,
        arrayCumSum(arrayMap((ri, hc, hp) -> toUInt8(ri = 1 AND hc != hp), r, h, arrayPushFront(arrayPopBack(h), toUInt64(0)))) AS dc
      FROM (
        -- r: a retry (the call before failed, at most the window earlier).
        SELECT
          tool_, c, f, h,
          arrayMap((ti, tp, fp) -> toUInt8(fp = 1 AND ti - tp <= @window_ms), t,
            arrayPushFront(arrayPopBack(t), toInt64(0)), arrayPushFront(arrayPopBack(f), toUInt8(0))) AS r
        FROM (
          -- t, f, h: the ts_ms, is_failure and args_hash of c.
          SELECT tool_, c, t, arrayMap(x -> x.5, c) AS f, arrayMap(x -> x.6, c) AS h
          FROM (
            -- c: the sequence without the extra copies of a re-ingested call.
            SELECT tool_, arrayFilter((x, k) -> k = 1, c0, keep) AS c, arrayFilter((x, k) -> k = 1, t0, keep) AS t
            FROM (
              -- keep: not a copy (same ts_ms and call_id as the element before;
              -- the latest ingest sorts first).
              SELECT
                tool_, c0, t0,
                arrayMap((dt, di) -> bitOr(dt != 0, di != 0),
                  arrayPushFront(arrayPopFront(arrayDifference(t0)), 1), arrayPushFront(arrayPopFront(arrayDifference(id0)), 1)) AS keep
              FROM (
                SELECT tool_, c0, arrayMap(x -> x.1, c0) AS t0, arrayMap(x -> x.3, c0) AS id0
                FROM (
                  SELECT
                    min(toString(client)) AS client_,
                    multiIf(@by_client = 1, concat(toString(length(client_)), ':', client_, toString(tool)), @by_pair = 1, concat(toString(length(toString(tenant))), ':', toString(tenant), toString(length(toString(server))), ':', toString(server), toString(tool)), toString(tool)) AS tool_,
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
GROUP BY tool, category, declared_retryable, expected_retryable
ORDER BY tool, category, declared_retryable, expected_retryable
