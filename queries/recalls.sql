-- Unchanged re-calls (docs/analytics.md, "Unchanged re-calls"): per tool and
-- category, the failed calls in [from, to), those whose next call of the same
-- tool in the same session key came at most window_ms later, and those whose
-- next call also had the identical args_hash: the agent sent the same request
-- again; and those that carried the server's retry-after hint, and whose
-- next call came within the window before the hint had passed. Sequences are built as in retry_outcomes.sql: calls of one (tenant,
-- server, session_key, tool), continuations left out, ordered by (ts_ms,
-- request_id, call_id), duplicate copies dropped by the array step, without
-- FINAL, and only the groups with a failure collected (see
-- retry_outcomes.sql). Reads [from, to + window), so that a
-- failure near the end of the range still has its next call. Relies on the
-- daily partitions for the time filter and on the (tenant, server, tool)
-- prefix of the sort key for the filters. With @by_pair = 1 the rows are
-- per tenant and server as well, their tool the pair's key, as in
-- retry_outcomes.sql; with @by_client = 1 per client as well, their tool
-- "<bytes of client>:<client><tool>", a group's client the least of its
-- calls' (a session has one). Without @by_client, Recalls runs this
-- statement without the client's columns and key branches
-- (queries.withoutClient), so that 18.16 does not read the column.
-- With the default window the failures of the hours from the range's first
-- (@from_hour_s) up to the bound (@bound_s, queries.foldedChainArgs: the
-- first hour without a current chain fold) come from the retention job's
-- fold of them (compact.RollupChains, schema/031_recalls_folded.sql, one
-- row a failure, valid with its hour's chain fold), and only those from
-- @raw_from_ms on from the raw calls, read from there to @to_ms + window;
-- with any other window the bound is the range's first hour and every
-- failure comes from the raw calls (BENCHMARKS.md, fifty-second round).
SELECT
  tool_ AS tool,
  fc.1 AS category,
  toUInt64(count()) AS failures,
  toUInt64(sum(fc.2)) AS with_next_call,
  toUInt64(sum(fc.3)) AS unchanged,
  toUInt64(sum(fc.4)) AS with_retry_after,
  toUInt64(sum(fc.5)) AS before_retry_after
FROM (
  -- Fold branch: the failures of the folded hours, one row each (Recalls
  -- leaves this branch out, to its UNION ALL, when no hour of the range is
  -- folded: queries.withoutFold).
  SELECT tool_, fc
  FROM (
    SELECT
      CAST(client AS String) AS client_,
      multiIf(@by_client = 1, concat(toString(length(client_)), ':', client_, toString(tool)),
        @by_pair = 1, concat(toString(length(toString(tenant))), ':', toString(tenant), toString(length(toString(server))), ':', toString(server), toString(tool)),
        toString(tool)) AS tool_,
      (CAST(category AS String), next, same, hinted, early) AS fc
    FROM recalls_folded
    PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM chain_current_folds)
    WHERE hour >= toDateTime(@from_hour_s, 'UTC') AND hour < toDateTime(@bound_s, 'UTC')
      AND ts_ms >= @from_ms AND ts_ms < @to_ms
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND (@server = '' OR server = @server)
      AND (@tool = '' OR tool = @tool))
  UNION ALL
  SELECT tool_, (f0.1, f0.2, f0.3, f0.6, f0.7) AS fc
  FROM (
    SELECT
      min(toString(client)) AS client_,
      multiIf(@by_client = 1, concat(toString(length(client_)), ':', client_, toString(tool)),
        @by_pair = 1, concat(toString(length(toString(tenant))), ':', toString(tenant), toString(length(toString(server))), ':', toString(server), toString(tool)),
        toString(tool)) AS tool_,
      arraySort(groupArray((ts_ms, request_id, call_id, -ingested_ms, is_failure, args_hash, CAST(category AS String), toUInt32(least(retry_after_ms, 4294967295))))) AS c0,
      arrayMap(x -> x.1, c0) AS t0,
      arrayMap(x -> x.3, c0) AS id0,
      arrayMap((dt, di) -> bitOr(dt != 0, di != 0),
        arrayPushFront(arrayPopFront(arrayDifference(t0)), 1), arrayPushFront(arrayPopFront(arrayDifference(id0)), 1)) AS keep,
      arrayFilter((x, k) -> k = 1, c0, keep) AS c,
      arrayFilter((x, k) -> k = 1, t0, keep) AS t,
      arrayMap(x -> x.6, c) AS h,
      -- tn: each call's successor's time (the last call has none: the largest
      -- Int64); nx: the next call came within the window; same: it also had
      -- the same args_hash. Per failure (fails): its category, nx, same,
      -- whether it carried a retry-after hint (clamped to UInt32 ms in c0,
      -- which keeps the arrays small) and whether its next call came within the window before
      -- the hint had passed.
      arrayPushBack(arrayPopFront(t), toInt64(9223372036854775807)) AS tn,
      arrayMap((ti, tj) -> toUInt8(tj - ti <= @window_ms), t, tn) AS nx,
      arrayMap((n, hc, hn) -> toUInt8(n = 1 AND hc = hn), nx, h, arrayPushBack(arrayPopFront(h), toUInt64(0))) AS same,
      arrayFilter(
        x -> x.4 = 1 AND x.5 >= @raw_from_ms AND x.5 < @to_ms,
        arrayMap((x, n, s, tj) -> (x.7, n, s, x.5, x.1, toUInt8(x.8 > 0), toUInt8(n = 1 AND x.8 > 0 AND tj - x.1 < x.8)), c, nx, same, tn)) AS fails
    FROM calls
    PREWHERE ts >= toDateTime(@lo_s, 'UTC') AND ts <= toDateTime(@hi_s, 'UTC')
      AND ts_ms >= @lo_ms AND ts_ms < @hi_ms
      AND continuation = 0
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND (@server = '' OR server = @server)
      AND (@tool = '' OR tool = @tool)
      -- Only the groups with a failure: their hashes first, from the failed
      -- calls alone (see the header).
      AND cityHash64(tenant, server, session_key, tool) GLOBAL IN (
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
  ARRAY JOIN fails AS f0
)
GROUP BY tool, category
ORDER BY tool, category
