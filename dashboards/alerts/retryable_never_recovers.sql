-- Alert MCPRetryableNeverRecovers: per tenant, server, tool and category, the
-- recovered share of the retried chains whose first call was declared or
-- expected retryable, for populations of at least 5 retried chains (the API's
-- min_chains); the rule fires below 10 %, the retryable_never_recovers kind of
-- queries/misclassifications.sql. The chains are cut as in
-- queries/retry_outcomes.sql: per tenant, server, session key and tool,
-- continuations left out, calls ordered by (ts_ms, request_id, call_id); a
-- call is a retry when the call before it failed at most 60 s earlier; a chain
-- starts at a failed call that is not a retry and is retried when it has a
-- retry, recovered when it ends with a success, same-argument when no retry
-- changed the first call's args_hash. Chains started in the rule's range (24
-- hours, the API's default window) count; calls are read from one window
-- before it.
-- The calls are grouped in an inner query and the chain arrays computed from
-- the group in the outer one: with the grouping and the lambdas in one
-- SELECT, ClickHouse 26.x evaluated the lambdas for every group before
-- HAVING and took seconds for a few hundred sessions.
SELECT
  tenant_name,
  server_name,
  tool_name,
  category_name,
  rr_ok / rr_chains AS recovered_share
FROM (
  SELECT
    tenant_name,
    server_name,
    tool_name,
    ch.1 AS category_name,
    toUInt64(countIf((ch.2 = 1 OR ch.3 = 1) AND ch.4 != 0)) AS rr_chains,
    toUInt64(countIf((ch.2 = 1 OR ch.3 = 1) AND ch.4 = 2)) AS rr_ok,
    toUInt64(countIf((ch.2 = 0 OR ch.3 = 0) AND ch.4 != 0 AND ch.6 = 0)) AS nr_chains,
    toUInt64(countIf((ch.2 = 0 OR ch.3 = 0) AND ch.4 = 2 AND ch.6 = 0)) AS nr_ok,
    toUInt64(countIf(ch.3 = 0 AND ch.4 != 0 AND ch.6 = 0)) AS wr_chains
  FROM (
    SELECT
      tenant_name,
      server_name,
      tool_name,
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
        x -> x.7 >= toInt64(toUInt32($__fromTime)) * 1000,
        arrayMap(
          (s, e) -> (c[s].6, c[s].7, c[s].8, toUInt8(multiIf(e = s, 0, f[e] = 1, 1, 2)), toUInt64(e - s + 1), toUInt8(dc[e] > dc[s]), t[s]),
          s_at, e_at)) AS chains_
    FROM (
      SELECT
        toString(tenant) AS tenant_name,
        toString(server) AS server_name,
        toString(tool) AS tool_name,
        arraySort(groupArray((ts_ms, request_id, call_id, is_failure, args_hash, toString(category), declared_retryable, expected_retryable))) AS c0
      FROM calls FINAL
      WHERE ts >= $__fromTime - 60 AND ts <= $__toTime
        AND continuation = 0
      GROUP BY tenant, server, session_key, tool
      HAVING max(is_failure) = 1
    )
  )
  ARRAY JOIN chains_ AS ch
  GROUP BY tenant_name, server_name, tool_name, category_name
)
WHERE rr_chains >= 5
ORDER BY tenant_name, server_name, tool_name, category_name
