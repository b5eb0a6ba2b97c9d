-- Retry habits by client (docs/dashboards.md; /api/v1/recalls?by=client per
-- tool and category): the seed article's two client mistakes, per client.
-- Of a client's failures whose category should be corrected, not retried
-- (expected retryable no: INVALID_ARGUMENT, UNAUTHENTICATED, UNKNOWN_TOOL...),
-- those it sent again unchanged within 60 s (resent); of those worth
-- retrying (expected retryable yes: RATE_LIMITED, UPSTREAM_TIMEOUT,
-- UNAVAILABLE...), those with no next call of the tool within 60 s (given
-- up); and of the failures that carried the server's retry-after hint, those
-- re-called before it had passed. A failure's client is its session's
-- clientInfo name (the least of the sequence's calls', one per session in
-- practice), '' where none was captured. The sequences are those of
-- queries/recalls.sql: calls of one (tenant, server, session_key, tool),
-- continuations left out, read up to one window past the range so that a
-- failure near its end has its next call, and only the groups with a
-- failure. A re-ingested call counts once without FINAL: the array step
-- drops the extra copies of a call, keeping its latest ingest.
SELECT
  client_ AS client_name,
  count() AS failures_n,
  countIf(fc.8 = 0) AS correctable_n,
  countIf(fc.8 = 0 AND fc.3 = 1) AS resent_n,
  countIf(fc.8 = 0 AND fc.3 = 1) / greatest(countIf(fc.8 = 0), 1) AS resent_share,
  countIf(fc.8 = 1) AS retryable_n,
  countIf(fc.8 = 1 AND fc.2 = 0) AS given_up_n,
  countIf(fc.8 = 1 AND fc.2 = 0) / greatest(countIf(fc.8 = 1), 1) AS given_up_share,
  sum(fc.6) AS with_retry_after_n,
  sum(fc.7) AS before_retry_after_n
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
    -- tn: each call's successor's time (the last call has none: the largest
    -- Int64); nx: the next call came within 60 s; same: it also had the same
    -- args_hash. Per failure (fails): its category, nx, same, its time and
    -- its successor's, whether it carried a retry-after hint, whether its
    -- next call came within 60 s before the hint had passed, and its
    -- expected retryability.
    arrayPushBack(arrayPopFront(t), toInt64(9223372036854775807)) AS tn,
    arrayMap((ti, tj) -> toUInt8(tj - ti <= 60000), t, tn) AS nx,
    arrayMap((n, hc, hn) -> toUInt8(n = 1 AND hc = hn), nx, h, arrayPushBack(arrayPopFront(h), toUInt64(0))) AS same,
    arrayFilter(
      x -> x.4 = 1 AND x.5 >= toInt64(toUInt32($__fromTime)) * 1000 AND x.5 < (toInt64(toUInt32($__toTime)) + 1) * 1000,
      arrayMap((x, n, s, tj) -> (x.7, n, s, x.5, x.1, toUInt8(x.8 > 0), toUInt8(n = 1 AND x.8 > 0 AND tj - x.1 < x.8), x.9), c, nx, same, tn)) AS fails
  FROM (
    SELECT
      min(toString(client)) AS client_,
      arraySort(groupArray((ts_ms, request_id, call_id, -ingested_ms, is_failure, args_hash, CAST(category AS String), toUInt32(least(retry_after_ms, 4294967295)), expected_retryable))) AS c0
    FROM calls
    PREWHERE ts >= $__fromTime AND ts <= $__toTime + 60
      AND ts_ms >= toInt64(toUInt32($__fromTime)) * 1000
      AND ts_ms < (toInt64(toUInt32($__toTime)) + 1) * 1000 + 60000
      AND continuation = 0
      AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
      AND $__conditionalAll(server IN (${server:singlequote}), $server)
      AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
      -- Only the groups with a failure (queries/retry_outcomes.sql).
      AND cityHash64(tenant, server, session_key, tool) GLOBAL IN (
        SELECT cityHash64(tenant, server, session_key, tool)
        FROM calls
        WHERE ts >= $__fromTime AND ts <= $__toTime + 60
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
ARRAY JOIN fails AS fc
GROUP BY client_name
ORDER BY failures_n DESC, client_name
