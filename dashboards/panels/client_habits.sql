-- Retry habits by client (docs/dashboards.md; /api/v1/recalls?by=client per
-- tool and category): the seed article's two client mistakes, per client.
-- Of a client's failures whose category should be corrected, not retried
-- (expected retryable no: INVALID_ARGUMENT, UNAUTHENTICATED, UNKNOWN_TOOL...),
-- those it sent again unchanged within 60 s (resent); of those worth
-- retrying (expected retryable yes: RATE_LIMITED, UPSTREAM_TIMEOUT,
-- UNAVAILABLE...), those with no next call of the tool within 60 s (given
-- up); and of the failures that carried the server's retry-after hint, those
-- re-called before it had passed. A failure's client is its session's
-- clientInfo name (the least of its sequence's calls', one per session in
-- practice), '' where none was captured. The sequences are those of
-- queries/recalls.sql: calls of one (tenant, server, session_key, tool),
-- continuations left out, read up to one window past the range so that a
-- failure near its end has its next call, and only the groups with a
-- failure. A re-ingested call counts once without FINAL: the array step
-- drops the extra copies of a call, keeping its latest ingest.
-- The failures of the hours that the retention job has folded
-- (compact.RollupChains, schema/031_recalls_folded.sql) are read from the
-- fold, one row a failure, from the range's first hour up to the dashboard's
-- hidden variable chain_bound (the first hour without a current chain fold,
-- variables/chain_bound.sql; the failures are folded with the chains and
-- valid as long as they are); the failures from the bound on are computed
-- from the raw calls, read from the bound (a failure's next call comes
-- after it, so nothing before the bound is needed). Over 24 hours of 10M calls the
-- raw form took 0.46 s on 18.16 and 0.38 s on 26.7 (BENCHMARKS.md,
-- fifty-second round). As in the chain panels, the raw read's PREWHERE
-- starts at the bound, the set of the groups with a failure is looked up in
-- its WHERE, and the constant condition that the bound is not past the
-- range's end lets the server read no raw call when every hour is folded.
SELECT
  fc.1 AS client_name,
  count() AS failures_n,
  countIf(fc.3 = 0) AS correctable_n,
  countIf(fc.3 = 0 AND fc.5 = 1) AS resent_n,
  countIf(fc.3 = 0 AND fc.5 = 1) / greatest(countIf(fc.3 = 0), 1) AS resent_share,
  countIf(fc.3 = 1) AS retryable_n,
  countIf(fc.3 = 1 AND fc.4 = 0) AS given_up_n,
  countIf(fc.3 = 1 AND fc.4 = 0) / greatest(countIf(fc.3 = 1), 1) AS given_up_share,
  sum(fc.6) AS with_retry_after_n,
  sum(fc.7) AS before_retry_after_n
FROM (
  -- fc: (client, category, expected retryable, next call within 60 s, with
  -- the same args_hash, hinted, re-called before the hint, ts_ms).
  SELECT (CAST(client AS String), CAST(category AS String), expected_retryable, next, same, hinted, early, ts_ms) AS fc
  FROM recalls_folded
  PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM chain_current_folds)
  WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600)
    AND hour < toDateTime(${chain_bound})
    AND ts_ms >= toInt64(toUInt32($__fromTime)) * 1000
    AND ts_ms < (toInt64(toUInt32($__toTime)) + 1) * 1000
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  UNION ALL
  SELECT (client_, f0.1, f0.2, f0.3, f0.4, f0.5, f0.6, f0.7) AS fc
  FROM (
    SELECT
      client_,
      arrayMap(x -> x.1, c0) AS t0,
      arrayMap(x -> x.3, c0) AS id0,
      -- c: the sequence without the extra copies of a re-ingested call (same
      -- ts_ms and call_id as the element before; the latest ingest sorts first).
      arrayMap((dt, di) -> bitOr(dt != 0, di != 0),
        arrayPushFront(arrayPopFront(arrayDifference(t0)), 1), arrayPushFront(arrayPopFront(arrayDifference(id0)), 1)) AS keep,
      arrayFilter((x, k) -> k = 1, c0, keep) AS c,
      arrayFilter((x, k) -> k = 1, t0, keep) AS t,
      arrayMap(x -> x.6, c) AS h,
      -- tn: each call's successor's time (the last call has none: the
      -- largest Int64); nx: the next call came within 60 s; same: it also had
      -- the same args_hash. Per failure in the range (fails): fc's elements
      -- after the client, and is_failure for the filter.
      arrayPushBack(arrayPopFront(t), toInt64(9223372036854775807)) AS tn,
      arrayMap((ti, tj) -> toUInt8(tj - ti <= 60000), t, tn) AS nx,
      arrayMap((n, hc, hn) -> toUInt8(n = 1 AND hc = hn), nx, h, arrayPushBack(arrayPopFront(h), toUInt64(0))) AS same,
      arrayFilter(
        x -> x.8 = 1 AND x.7 >= toInt64(toUInt32($__fromTime)) * 1000 AND x.7 < (toInt64(toUInt32($__toTime)) + 1) * 1000,
        arrayMap((x, n, s, tj) -> (x.7, x.9, n, s, toUInt8(x.8 > 0), toUInt8(n = 1 AND x.8 > 0 AND tj - x.1 < x.8), x.1, x.5), c, nx, same, tn)) AS fails
    FROM (
      SELECT
        min(CAST(client AS String)) AS client_,
        arraySort(groupArray((ts_ms, request_id, call_id, -ingested_ms, is_failure, args_hash, CAST(category AS String), toUInt32(least(retry_after_ms, 4294967295)), expected_retryable))) AS c0
      FROM calls
      PREWHERE ts >= $__fromTime AND ts >= toDateTime(${chain_bound}) AND ts <= $__toTime + 60
        AND ts_ms >= toInt64(toUInt32($__fromTime)) * 1000
        AND ts_ms < (toInt64(toUInt32($__toTime)) + 1) * 1000 + 60000
        AND continuation = 0
        AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
        AND $__conditionalAll(server IN (${server:singlequote}), $server)
        AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
      WHERE ts >= toDateTime(${chain_bound})
        AND toDateTime(${chain_bound}) <= $__toTime
        -- Only the groups with a failure (queries/retry_outcomes.sql), in
        -- the WHERE (see the header).
        AND cityHash64(tenant, server, session_key, tool) GLOBAL IN (
          SELECT cityHash64(tenant, server, session_key, tool)
          FROM calls
          WHERE ts >= $__fromTime AND ts >= toDateTime(${chain_bound}) AND ts <= $__toTime + 60
            AND toDateTime(${chain_bound}) <= $__toTime
            AND ts_ms >= toInt64(toUInt32($__fromTime)) * 1000
            AND ts_ms < (toInt64(toUInt32($__toTime)) + 1) * 1000 + 60000
            AND continuation = 0
            AND is_failure = 1
            AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
            AND $__conditionalAll(server IN (${server:singlequote}), $server)
            AND $__conditionalAll(tool IN (${tool:singlequote}), $tool))
      GROUP BY tenant, server, session_key, tool
      HAVING max(is_failure) = 1
    )
  )
  ARRAY JOIN fails AS f0
)
GROUP BY client_name
ORDER BY failures_n DESC, client_name
