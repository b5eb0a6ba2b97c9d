-- Alert MCPUnchangedRecalls: per tenant, server and tool, the share of the
-- failed calls in the rule's range (the last hour) whose next call of the
-- same tool in the same session key came within 60 s with identical
-- arguments (queries/recalls.sql): the agent sent the same failing request
-- again. Only tools with at least 20 failures are returned. Continuations are
-- left out; a failure whose next call falls after the range counts as not
-- re-called. A re-ingested call counts once without FINAL: the array step
-- drops the extra copies of a call, keeping its latest ingest
-- (queries/recalls.sql).
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
      arrayMap(x -> x.1, c0) AS t0,
      arrayMap(x -> x.3, c0) AS id0,
      -- c: the sequence without the extra copies of a re-ingested call (same
      -- ts_ms and call_id as the element before; the latest ingest sorts first).
      arrayMap((dt, di) -> bitOr(dt != 0, di != 0),
        arrayPushFront(arrayPopFront(arrayDifference(t0)), 1), arrayPushFront(arrayPopFront(arrayDifference(id0)), 1)) AS keep,
      arrayFilter((x, k) -> k = 1, c0, keep) AS c,
      arrayFilter((x, k) -> k = 1, t0, keep) AS t,
      arrayMap(x -> x.5, c) AS f,
      arrayMap(x -> x.6, c) AS h,
      -- per failure: the next call came within 60 s with the same args_hash.
      arrayFilter(
        (s, fi) -> fi = 1,
        arrayMap((ti, tn, hc, hn) -> toUInt8(tn - ti <= 60000 AND hc = hn), t,
          arrayPushBack(arrayPopFront(t), toInt64(9223372036854775807)), h, arrayPushBack(arrayPopFront(h), toUInt64(0))),
        f) AS fails
    FROM (
      SELECT
        toString(tenant) AS tenant_name,
        toString(server) AS server_name,
        toString(tool) AS tool_name,
        arraySort(groupArray((ts_ms, request_id, call_id, -ingested_ms, is_failure, args_hash))) AS c0
      FROM calls
      WHERE $__timeFilter(ts)
        AND continuation = 0
        -- Only the groups with a failure (queries/retry_outcomes.sql).
        AND cityHash64(tenant, server, session_key, tool) GLOBAL IN (
          SELECT cityHash64(tenant, server, session_key, tool)
          FROM calls
          WHERE $__timeFilter(ts)
            AND continuation = 0
            AND is_failure = 1)
      GROUP BY tenant, server, session_key, tool
      HAVING max(is_failure) = 1
    )
  )
  ARRAY JOIN fails AS fc
  GROUP BY tenant_name, server_name, tool_name
)
WHERE failures_n >= 20
ORDER BY tenant_name, server_name, tool_name
