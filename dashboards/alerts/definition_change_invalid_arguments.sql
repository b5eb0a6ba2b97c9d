-- Alert MCPDefinitionChangeInvalidArguments: per tenant, server and tool
-- whose definition changed in the last 24 hours (the latest change, c: a
-- sighting whose hash differs from the one before it), how many times the
-- INVALID_ARGUMENT share of the calls since c exceeds the share of the 24
-- hours before c. Only tools with at least 20 calls and a share of at least
-- 5 % since the change are returned; a tool without INVALID_ARGUMENT calls
-- before the change compares with 0 and gets the cap, 1000. Calls are
-- counted per minute (a change splits its minute by the minute's start),
-- and the change points and the minute counts meet in one array per tool,
-- without a join. The rule's range is 2 days, ending now. Sightings are read
-- without FINAL: a replayed one is a copy of its original and no change.
-- The calls are read only for the tools with a change in the last 24 hours,
-- found by the same change-point query (the statement has it twice: 18.16
-- has no common table expressions), in PREWHERE, so that FINAL merges their
-- rows alone: over every tool it took 3.7 s on 18.16 at 10M calls a week,
-- which Grafana paid every minute (BENCHMARKS.md, fourteenth round). 18.16
-- does not narrow a read by the primary key for a GLOBAL IN set, which a
-- cluster needs; PREWHERE drops the other rows before the merge (their key
-- columns are the same in every copy of a call).
SELECT
  tenant_name,
  server_name,
  tool_name,
  if(before_invalid = 0, toFloat64(1000), least(toFloat64(1000), (after_invalid * before_calls) / (before_invalid * after_calls))) AS rise_ratio
FROM (
  SELECT
    tenant_name,
    server_name,
    tool_name,
    max(change_ms) AS c,
    groupArray((minute_ms, n, inv)) AS ms,
    arraySum(arrayMap(x -> if(x.1 >= c, x.2, 0), ms)) AS after_calls,
    arraySum(arrayMap(x -> if(x.1 >= c, x.3, 0), ms)) AS after_invalid,
    arraySum(arrayMap(x -> if(x.1 < c AND x.1 >= c - 86400000, x.2, 0), ms)) AS before_calls,
    arraySum(arrayMap(x -> if(x.1 < c AND x.1 >= c - 86400000, x.3, 0), ms)) AS before_invalid
  FROM (
    SELECT
      CAST(tenant AS String) AS tenant_name,
      CAST(server AS String) AS server_name,
      CAST(tool AS String) AS tool_name,
      toInt64(0) AS change_ms,
      toInt64(intDiv(ts_ms, 60000) * 60000) AS minute_ms,
      toUInt64(count()) AS n,
      toUInt64(countIf(category = 'INVALID_ARGUMENT')) AS inv
    FROM calls FINAL
    PREWHERE (tenant, server, tool) GLOBAL IN (
        SELECT tenant_name, server_name, tool_name
        FROM (
          SELECT
            CAST(tenant AS String) AS tenant_name,
            CAST(server AS String) AS server_name,
            CAST(tool AS String) AS tool_name,
            arraySort(groupArray((ts_ms, definition_hash))) AS s,
            arrayMap(x -> x.2, s) AS hashes,
            arrayFilter((x, h, q, i) -> i > 1 AND h != q, s, hashes,
              arrayPushFront(arrayPopBack(hashes), toUInt64(0)), arrayEnumerate(s)) AS points
          FROM tool_sightings
          WHERE ts <= $__toTime
          GROUP BY tenant_name, server_name, tool_name
        )
        ARRAY JOIN points AS p
        WHERE p.1 >= (toInt64(toUInt32($__toTime)) - 86400) * 1000)
    WHERE $__timeFilter(ts)
    GROUP BY tenant_name, server_name, tool_name, minute_ms
    UNION ALL
    SELECT
      tenant_name,
      server_name,
      tool_name,
      toInt64(p.1) AS change_ms,
      toInt64(0) AS minute_ms,
      toUInt64(0) AS n,
      toUInt64(0) AS inv
    FROM (
      SELECT
        CAST(tenant AS String) AS tenant_name,
        CAST(server AS String) AS server_name,
        CAST(tool AS String) AS tool_name,
        arraySort(groupArray((ts_ms, definition_hash))) AS s,
        arrayMap(x -> x.2, s) AS hashes,
        arrayFilter((x, h, q, i) -> i > 1 AND h != q, s, hashes,
          arrayPushFront(arrayPopBack(hashes), toUInt64(0)), arrayEnumerate(s)) AS points
      FROM tool_sightings
      WHERE ts <= $__toTime
      GROUP BY tenant_name, server_name, tool_name
    )
    ARRAY JOIN points AS p
    WHERE p.1 >= (toInt64(toUInt32($__toTime)) - 86400) * 1000
  )
  GROUP BY tenant_name, server_name, tool_name
  HAVING c > 0
)
WHERE after_calls >= 20
  AND after_invalid * 20 >= after_calls
  AND after_invalid * before_calls >= 2 * before_invalid * after_calls
ORDER BY tenant_name, server_name, tool_name
