-- Misclassification kind retried_non_idempotent (docs/analytics.md): per tool
-- and category of the first call, the retry chains started in [from, to)
-- whose first call failed ambiguously (UPSTREAM_TIMEOUT or UNAVAILABLE, which
-- includes calls that got no answer: the tool may have run) and that were
-- retried, for tools whose current definition declares neither
-- idempotentHint nor readOnlyHint true: each retry may have repeated the
-- effect. @keys lists those tools as tenant, server and tool joined by
-- newlines (queries/retried_non_idempotent.go reads the definitions; it is
-- never empty). Chains are cut exactly as misclassifications.sql cuts them
-- (see retry_outcomes.sql for the method): copies of a re-ingested call are
-- dropped in the array step, continuations are left out.
SELECT
  CAST(tool_ AS String) AS tool,
  CAST(ch.1 AS String) AS category,
  toUInt64(count()) AS chains,
  toUInt64(sum(ch.5)) AS calls,
  toUInt64(countIf(ch.4 = 2)) AS recovered,
  toUInt64(count()) AS total
FROM (
  SELECT
    tool AS tool_,
    arraySort(groupArray((ts_ms, request_id, call_id, -ingested_ms, is_failure, args_hash, CAST(category AS String), declared_retryable, expected_retryable))) AS c0,
    arrayMap(x -> x.1, c0) AS t0,
    arrayMap(x -> x.3, c0) AS id0,
    arrayMap((dt, di) -> bitOr(dt != 0, di != 0),
      arrayPushFront(arrayPopFront(arrayDifference(t0)), 1), arrayPushFront(arrayPopFront(arrayDifference(id0)), 1)) AS keep,
    arrayFilter((x, k) -> k = 1, c0, keep) AS c,
    arrayFilter((x, k) -> k = 1, t0, keep) AS t,
    arrayMap(x -> x.5, c) AS f,
    arrayMap((ti, tp, fp) -> toUInt8(fp = 1 AND ti - tp <= @window_ms), t,
      arrayPushFront(arrayPopBack(t), toInt64(0)), arrayPushFront(arrayPopBack(f), toUInt8(0))) AS r,
    arrayMap((fi, ri) -> toUInt8(fi = 1 AND ri = 0), f, r) AS st,
    arrayMap((fi, ri, rn) -> toUInt8((fi = 1 OR ri = 1) AND rn = 0), f, r, arrayPushBack(arrayPopFront(r), toUInt8(0))) AS en,
    arrayFilter((i, s) -> s = 1, arrayEnumerate(c), st) AS s_at,
    arrayFilter((i, e) -> e = 1, arrayEnumerate(c), en) AS e_at,
    -- ch: (category, declared, expected, outcome (0 no_retry, 1 retry_then_fail,
    -- 2 retry_then_success), calls, first ts_ms), as in misclassifications.sql.
    arrayFilter(
      x -> x.6 >= @from_ms AND x.6 < @to_ms AND x.4 != 0 AND (x.1 = 'UPSTREAM_TIMEOUT' OR x.1 = 'UNAVAILABLE'),
      arrayMap(
        (x, s, e, fe) -> (x.7, x.8, x.9, toUInt8(multiIf(e = s, 0, fe = 1, 1, 2)), toUInt64(e - s + 1), x.1),
        arrayFilter((x, s) -> s = 1, c, st), s_at, e_at,
        arrayFilter((x, e) -> e = 1, f, en))) AS chains_
  FROM calls
  WHERE ts >= toDateTime(@lo_s, 'UTC') AND ts <= toDateTime(@hi_s, 'UTC')
    AND ts_ms >= @lo_ms AND ts_ms < @hi_ms
    AND continuation = 0
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
    AND has(@keys, concat(toString(tenant), '\n', toString(server), '\n', toString(tool)))
  GROUP BY tenant, server, session_key, tool
  HAVING max(is_failure) = 1
)
ARRAY JOIN chains_ AS ch
GROUP BY tool_, ch.1
HAVING chains >= @min_chains
ORDER BY tool, category
