-- Alert MCPRetryAfterIgnored: per tenant, server and tool, the share of the
-- failed calls in the rule's range (the last hour) that carried the server's
-- retry-after hint and whose next call of the same tool in the same session
-- key came within 60 s and before the hint had passed
-- (queries/recalls.sql, before_retry_after / with_retry_after): clients retry
-- sooner than the server asked, which keeps a rate limit or an exhausted
-- pool saturated. Only tools with at least 20 such failures are returned.
-- Continuations are left out; a failure whose next call falls after the
-- range counts as waited for. A re-ingested call counts once without FINAL:
-- the array step drops the extra copies of a call, keeping its latest ingest
-- (queries/recalls.sql).
SELECT
  tenant_name,
  server_name,
  tool_name,
  early_n / hinted_n AS before_retry_after_rate
FROM (
  SELECT
    tenant_name,
    server_name,
    tool_name,
    sum(fc) AS early_n,
    count() AS hinted_n
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
      -- per failure with a hint: the next call came within 60 s and sooner
      -- than the hint.
      arrayFilter(
        (e, x) -> x.5 = 1 AND x.6 > 0,
        arrayMap((x, ti, tn) -> toUInt8(tn - ti <= 60000 AND tn - ti < x.6), c, t,
          arrayPushBack(arrayPopFront(t), toInt64(9223372036854775807))),
        c) AS fails
    FROM (
      SELECT
        toString(tenant) AS tenant_name,
        toString(server) AS server_name,
        toString(tool) AS tool_name,
        arraySort(groupArray((ts_ms, request_id, call_id, -ingested_ms, is_failure, retry_after_ms))) AS c0
      FROM calls
      WHERE $__timeFilter(ts)
        AND continuation = 0
        -- Only the groups with a hinted failure (queries/retry_outcomes.sql).
        AND cityHash64(tenant, server, session_key, tool) GLOBAL IN (
          SELECT cityHash64(tenant, server, session_key, tool)
          FROM calls
          WHERE $__timeFilter(ts)
            AND continuation = 0
            AND is_failure = 1
            AND retry_after_ms > 0)
      GROUP BY tenant, server, session_key, tool
      HAVING max(is_failure) = 1
    )
  )
  ARRAY JOIN fails AS fc
  GROUP BY tenant_name, server_name, tool_name
)
WHERE hinted_n >= 20
ORDER BY tenant_name, server_name, tool_name
