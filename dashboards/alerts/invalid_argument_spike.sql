-- Alert MCPInvalidArgumentSpike: per tenant, server and tool, how many times
-- the INVALID_ARGUMENT share of the last hour exceeds the tool's share over
-- the 7 days before it (queries/testdata/invalid_argument_spikes_final.sql,
-- the API's definition; same test). Only tools with at least 20 calls and a
-- share of at least 5 % in the last hour are returned. The ratio is computed
-- from integer products, so that a share of exactly 3 times the baseline
-- gives exactly 3; a tool without INVALID_ARGUMENT calls in the baseline
-- compares with 0 and gets the cap, 1000. The rule's range is 7 days and 1
-- hour, ending now. The baseline is read only for the tools that can pass
-- the floor in the last hour, as the API reads it only for the tools whose
-- range passes the floor: their distinct calls (exact) and INVALID_ARGUMENT
-- rows (at least the calls whose latest ingest is one) pass it.
-- The baseline's complete hours come from their plain counts in
-- calls_5m_folded where a fold made at the hour's current insert count
-- holds them, the other hours from calls_5m's states, with the same counts
-- (queries/invalid_argument_baseline_rollup.sql; 1.7-2.3x faster over
-- 1,820 tools, BENCHMARKS.md, seventeenth round).
SELECT
  tenant_name,
  server_name,
  tool_name,
  if(base_invalid = 0, toFloat64(1000), least(toFloat64(1000), (invalid_n * base_calls) / (base_invalid * calls_n))) AS spike_ratio
FROM (
  SELECT
    tenant_name,
    server_name,
    tool_name,
    toUInt64(sum(d_)) AS calls_n,
    toUInt64(sum(m_)) AS invalid_n,
    toUInt64(sum(bd_)) AS base_calls,
    toUInt64(sum(bm_)) AS base_invalid
  FROM (
    SELECT
      toString(tenant) AS tenant_name,
      toString(server) AS server_name,
      toString(tool) AS tool_name,
      toInt64(count()) AS d_,
      toInt64(countIf(category = 'INVALID_ARGUMENT')) AS m_,
      toInt64(0) AS bd_,
      toInt64(0) AS bm_
    FROM calls
    WHERE ts > $__toTime - 3600 AND ts <= $__toTime
    GROUP BY tenant_name, server_name, tool_name
    UNION ALL
    SELECT tenant_name, server_name, tool_name, -toInt64(1), -toInt64(s.2 = 'INVALID_ARGUMENT'), toInt64(0), toInt64(0)
    FROM (
      SELECT
        toString(tenant) AS tenant_name,
        toString(server) AS server_name,
        toString(tool) AS tool_name,
        arrayPopFront(arraySort(x -> -x.1, groupArray((ingested_ms, CAST(category AS String), is_failure)))) AS stale
      FROM calls
      WHERE ts > $__toTime - 3600 AND ts <= $__toTime
        AND call_id GLOBAL IN (
          SELECT call_id
          FROM calls
          WHERE ts > $__toTime - 3600 AND ts <= $__toTime
          GROUP BY call_id
          HAVING count() > 1)
      GROUP BY tenant, server, tool, session_key, ts_ms, call_id
    )
    ARRAY JOIN stale AS s
    UNION ALL
    SELECT
      toString(tenant) AS tenant_name,
      toString(server) AS server_name,
      toString(tool) AS tool_name,
      toInt64(0),
      toInt64(0),
      toInt64(sum(calls)),
      toInt64(sum(invalid))
    FROM calls_5m_folded
    PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds)
    WHERE bucket >= $__fromTime
      AND bucket < toDateTime(intDiv(toUInt32($__toTime) - 3600, 300) * 300)
      AND hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600)
      AND hour < toDateTime(intDiv(toUInt32($__toTime) - 3600, 300) * 300)
      AND (tenant, server, tool) GLOBAL IN (
        SELECT tenant, server, tool
        FROM calls
        WHERE ts > $__toTime - 3600 AND ts <= $__toTime
        GROUP BY tenant, server, tool
        HAVING uniqExact(session_key, ts_ms, call_id) >= 20
          AND countIf(category = 'INVALID_ARGUMENT') * 20 >= uniqExact(session_key, ts_ms, call_id))
    GROUP BY tenant_name, server_name, tool_name
    UNION ALL
    SELECT
      toString(tenant) AS tenant_name,
      toString(server) AS server_name,
      toString(tool) AS tool_name,
      toInt64(0),
      toInt64(0),
      toInt64(uniqExactMerge(calls)),
      toInt64(uniqExactMergeIf(calls, category = 'INVALID_ARGUMENT'))
    FROM calls_5m
    PREWHERE toDateTime(intDiv(toUInt32(bucket), 3600) * 3600, 'UTC') GLOBAL NOT IN (SELECT hour FROM calls_5m_current_folds)
    WHERE bucket >= $__fromTime
      AND bucket < toDateTime(intDiv(toUInt32($__toTime) - 3600, 300) * 300)
      AND (tenant, server, tool) GLOBAL IN (
        SELECT tenant, server, tool
        FROM calls
        WHERE ts > $__toTime - 3600 AND ts <= $__toTime
        GROUP BY tenant, server, tool
        HAVING uniqExact(session_key, ts_ms, call_id) >= 20
          AND countIf(category = 'INVALID_ARGUMENT') * 20 >= uniqExact(session_key, ts_ms, call_id))
    GROUP BY tenant_name, server_name, tool_name
  )
  GROUP BY tenant_name, server_name, tool_name
)
WHERE calls_n >= 20 AND invalid_n * 20 >= calls_n
ORDER BY tenant_name, server_name, tool_name
