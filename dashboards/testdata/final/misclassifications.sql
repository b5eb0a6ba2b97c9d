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
-- queries/misclassifications.sql). A row needs min_chains chains;
-- evidence_share is the recovered share of the chains.
-- The calls are grouped in an inner query and the chain arrays computed from
-- the group in the outer one: with the grouping and the lambdas in one
-- SELECT, ClickHouse 26.x evaluated the lambdas for every group before
-- HAVING and took seconds for a few hundred sessions.
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
      toUInt64(countIf((ch.2 = 1 OR ch.3 = 1) AND ch.4 != 0)) AS rr_chains,
      toUInt64(sumIf(ch.5, (ch.2 = 1 OR ch.3 = 1) AND ch.4 != 0)) AS rr_calls,
      toUInt64(countIf((ch.2 = 1 OR ch.3 = 1) AND ch.4 = 2)) AS rr_ok,
      toUInt64(countIf((ch.2 = 0 OR ch.3 = 0) AND ch.4 != 0 AND ch.6 = 0)) AS nr_chains,
      toUInt64(sumIf(ch.5, (ch.2 = 0 OR ch.3 = 0) AND ch.4 != 0 AND ch.6 = 0)) AS nr_calls,
      toUInt64(countIf((ch.2 = 0 OR ch.3 = 0) AND ch.4 = 2 AND ch.6 = 0)) AS nr_ok,
      toUInt64(countIf(ch.3 = 0 AND ch.4 != 0 AND ch.6 = 0)) AS wr_chains,
      toUInt64(sumIf(ch.5, ch.3 = 0 AND ch.4 != 0 AND ch.6 = 0)) AS wr_calls,
      toUInt64(countIf(ch.3 = 0 AND ch.4 = 2 AND ch.6 = 0)) AS wr_ok,
      toUInt64(countIf(ni_ = 1 AND (ch.1 = 'UPSTREAM_TIMEOUT' OR ch.1 = 'UNAVAILABLE') AND ch.4 != 0)) AS ni_chains,
      toUInt64(sumIf(ch.5, ni_ = 1 AND (ch.1 = 'UPSTREAM_TIMEOUT' OR ch.1 = 'UNAVAILABLE') AND ch.4 != 0)) AS ni_calls,
      toUInt64(countIf(ni_ = 1 AND (ch.1 = 'UPSTREAM_TIMEOUT' OR ch.1 = 'UNAVAILABLE') AND ch.4 = 2)) AS ni_ok
    FROM (
      SELECT
        tool_,
        ni_,
        arrayFilter((x, i) -> i = 1 OR x.3 != c0[i - 1].3 OR x.1 != c0[i - 1].1, c0, arrayEnumerate(c0)) AS c,
        arrayMap(x -> x.1, c) AS t,
        arrayMap(x -> x.4, c) AS f,
        arrayMap(x -> x.5, c) AS h,
        arrayEnumerate(c) AS ix,
        arrayMap(i -> toUInt8(i > 1 AND f[i - 1] = 1 AND t[i] - t[i - 1] <= 60000), ix) AS r,
        arrayMap(i -> toUInt8(f[i] = 1 AND r[i] = 0), ix) AS st,
        arrayFilter(i -> st[i] = 1, ix) AS s_at,
        arrayFilter(i -> (f[i] = 1 OR r[i] = 1) AND (i = length(c) OR r[i + 1] = 0), ix) AS e_at,
        arrayCumSum(st) AS k,
        arrayCumSum(arrayMap(i -> toUInt8(r[i] = 1 AND h[i] != h[s_at[k[i]]]), ix)) AS dc,
        arrayFilter(
          x -> x.7 >= toInt64(toUInt32($__fromTime)) * 1000 AND x.7 < (toInt64(toUInt32($__toTime)) + 1) * 1000,
          arrayMap(
            (s, e) -> (c[s].6, c[s].7, c[s].8, toUInt8(multiIf(e = s, 0, f[e] = 1, 1, 2)), toUInt64(e - s + 1), toUInt8(dc[e] > dc[s]), t[s]),
            s_at, e_at)) AS chains_
      FROM (
        SELECT
          tool AS tool_,
          toUInt8((toString(tenant), toString(server), toString(tool)) GLOBAL IN (
            SELECT tenant_, server_, tool_
            FROM (
              SELECT
                toString(tenant) AS tenant_,
                toString(server) AS server_,
                toString(tool) AS tool_,
                definition_hash AS hash_
              FROM tool_sightings FINAL
              WHERE ts_ms < (toInt64(toUInt32($__toTime)) + 1) * 1000
              ORDER BY tenant_, server_, tool_, ts_ms DESC, hash_ DESC
              LIMIT 1 BY tenant_, server_, tool_
            )
            WHERE (tenant_, server_, tool_, hash_) GLOBAL NOT IN (
              SELECT toString(tenant), toString(server), toString(tool), definition_hash
              FROM tool_definitions FINAL
              WHERE idempotent_hint = 1 OR read_only_hint = 1))) AS ni_,
          arraySort(groupArray((ts_ms, request_id, call_id, is_failure, args_hash, toString(category), declared_retryable, expected_retryable))) AS c0
        FROM calls FINAL
        WHERE ts >= $__fromTime - 60 AND ts <= $__toTime + 600
          AND ts_ms >= toInt64(toUInt32($__fromTime)) * 1000 - 60000
          AND ts_ms < (toInt64(toUInt32($__toTime)) + 1) * 1000 + 600000
          AND continuation = 0
          AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
          AND $__conditionalAll(server IN (${server:singlequote}), $server)
          AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
        GROUP BY tenant, server, session_key, tool
        HAVING max(is_failure) = 1
      )
    )
    ARRAY JOIN chains_ AS ch
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
