-- Retry loops (docs/analytics.md, "Retry loops"): the longest retry chains
-- started in [from, to), one row a chain: the session and tool that kept
-- calling after failures, how many calls it took, whether the arguments
-- ever changed and how it ended. Chains are cut as retry_outcomes.sql cuts
-- them (the same array steps; see its header for why each step is written
-- this way), from the raw calls read from one window before from to the
-- chain horizon after to, so a chain that runs past the horizon counts its
-- calls up to it.
-- With the default window the chains that start in the hours the retention
-- job has folded (compact.RollupChains, schema/026_chains_folded.sql, which
-- keeps each chain's session, client, last call and first call since
-- schema/035-039) are read from the fold, one row a chain, from the hour the
-- range starts in up to @bound_s (queries.foldedChainArgs, as
-- retry_outcomes.sql); only those from @raw_from_ms on come from the raw
-- calls, read from one window before it. With another window every chain
-- comes from the raw calls.
-- Only the groups of (tenant, server, session_key, tool) that hold at least
-- @min_failures failed calls in what is read are collected: a chain of n
-- calls has at least n - 1 failed ones (every call but the last), so with
-- min_failures = min_attempts - 1 no chain of min_attempts calls is left
-- out, and a healthy fleet's occasional failure costs no grouping.
-- A group's client is the least client name of its calls (a session's
-- clientInfo; recalls.sql takes it the same way).
SELECT
  tenant_ AS tenant,
  server_ AS server,
  tool_ AS tool,
  session_ AS session,
  client_ AS client,
  ch.1 AS start_ms,
  ch.2 AS end_ms,
  ch.3 AS attempts,
  ch.4 AS outcome,
  ch.5 AS args_changed,
  ch.6 AS category,
  ch.7 AS declared_retryable,
  ch.8 AS expected_retryable,
  ch.9 AS first_call_id
FROM (
  -- Fold branch: the chains of the folded hours with min_attempts calls or
  -- more (RetryLoops leaves this branch out, to its UNION ALL, when no hour
  -- of the range is folded: queries.withoutFold).
  SELECT
    toString(tenant) AS tenant_,
    toString(server) AS server_,
    session_key AS session_,
    toString(tool) AS tool_,
    CAST(client AS String) AS client_,
    (start_ms, end_ms, attempts, outcome, args_changed, CAST(category AS String), declared_retryable, expected_retryable, first_call_id) AS ch
  FROM chains_folded
  PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM chain_current_folds)
  WHERE hour >= toDateTime(@from_hour_s, 'UTC') AND hour < toDateTime(@bound_s, 'UTC')
    AND start_ms >= @from_ms AND start_ms < @to_ms
    AND attempts >= @min_attempts
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
  UNION ALL
  SELECT tenant_, server_, session_, tool_, client_, ch0 AS ch
  FROM (
    SELECT
      tenant_, server_, session_, tool_, client_,
      -- One tuple per chain started in range: (first ts_ms, last ts_ms,
      -- calls, outcome: 0 no_retry, 1 retry_then_fail, 2 retry_then_success,
      -- args changed, category, declared, expected, first call_id).
      arrayFilter(
        x -> x.1 >= @raw_from_ms AND x.1 < @to_ms AND x.3 >= @min_attempts,
        arrayMap(
          (x, s, e, fe, ds, de, xe) -> (x.1, xe.1, toUInt64(e - s + 1), toUInt8(multiIf(e = s, 0, fe = 1, 1, 2)), toUInt8(de > ds), x.7, x.8, x.9, x.3),
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
          arrayMap((ti, tp, fp) -> toUInt8(fp = 1 AND ti - tp <= @window_ms), t,
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
                  FROM calls
                  PREWHERE ts >= toDateTime(@lo_s, 'UTC') AND ts <= toDateTime(@hi_s, 'UTC')
                    AND ts_ms >= @lo_ms AND ts_ms < @hi_ms
                    AND continuation = 0
                    AND (@tenant = '' OR tenant = @tenant)
                    AND (@all_tenants = 1 OR has(@tenants, tenant))
                    AND (@server = '' OR server = @server)
                    AND (@tool = '' OR tool = @tool)
                  -- Only the groups with min_failures failed calls: their hashes
                  -- first, from the failed calls alone, looked up in WHERE (as
                  -- retry_outcomes.sql does).
                  WHERE cityHash64(tenant, server, session_key, tool) GLOBAL IN (
                      SELECT cityHash64(tenant, server, session_key, tool) AS group_
                      FROM calls
                      WHERE ts >= toDateTime(@lo_s, 'UTC') AND ts <= toDateTime(@hi_s, 'UTC')
                        AND ts_ms >= @lo_ms AND ts_ms < @hi_ms
                        AND continuation = 0
                        AND is_failure = 1
                        AND (@tenant = '' OR tenant = @tenant)
                        AND (@all_tenants = 1 OR has(@tenants, tenant))
                        AND (@server = '' OR server = @server)
                        AND (@tool = '' OR tool = @tool)
                      GROUP BY group_
                      HAVING count() >= @min_failures)
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
ORDER BY attempts DESC, start_ms DESC, tenant, server, session, tool
LIMIT @limit
