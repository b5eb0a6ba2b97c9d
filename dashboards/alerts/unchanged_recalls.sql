-- Alert MCPUnchangedRecalls: per tenant, server and tool, the share of the
-- failed calls in the rule's range (the last hour) whose next call of the
-- same tool in the same session key came within 60 s with identical
-- arguments (queries/recalls.sql): the agent sent the same failing request
-- again. Only tools with at least 20 failures are returned. Continuations are
-- left out; a failure whose next call falls after the range counts as not
-- re-called.
SELECT
  tenant_name,
  server_name,
  tool_name,
  unchanged_n / failures_n AS unchanged_rate
FROM (
  SELECT
    tenant_name,
    server_name,
    tool_name,
    sum(fc) AS unchanged_n,
    count() AS failures_n
  FROM (
    SELECT
      tenant_name,
      server_name,
      tool_name,
      arrayFilter((x, i) -> i = 1 OR x.3 != c0[i - 1].3 OR x.1 != c0[i - 1].1, c0, arrayEnumerate(c0)) AS c,
      arrayMap(x -> x.1, c) AS t,
      arrayMap(x -> x.5, c) AS h,
      arrayMap(
        i -> toUInt8(i < length(c) AND t[i + 1] - t[i] <= 60000 AND h[i + 1] = h[i]),
        arrayFilter(i -> c[i].4 = 1, arrayEnumerate(c))) AS fails
    FROM (
      SELECT
        toString(tenant) AS tenant_name,
        toString(server) AS server_name,
        toString(tool) AS tool_name,
        arraySort(groupArray((ts_ms, request_id, call_id, is_failure, args_hash))) AS c0
      FROM calls FINAL
      WHERE $__timeFilter(ts)
        AND continuation = 0
      GROUP BY tenant, server, session_key, tool
      HAVING max(is_failure) = 1
    )
  )
  ARRAY JOIN fails AS fc
  GROUP BY tenant_name, server_name, tool_name
)
WHERE failures_n >= 20
ORDER BY tenant_name, server_name, tool_name
