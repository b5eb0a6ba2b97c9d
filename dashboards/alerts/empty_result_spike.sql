-- Alert MCPEmptyResultSpike: per tenant, server and tool, how many times the
-- empty-result rate of the last hour (EMPTY_RESULT among the calls that did
-- not fail) exceeds the tool's rate over the 7 days before it. Only tools
-- with at least 20 non-failed calls and a rate of at least 20 % in the last
-- hour are returned. As for INVALID_ARGUMENT spikes, the ratio comes from
-- integer products and a tool without empty results in the baseline gets
-- the cap, 1000. The rule's range is 7 days and 1 hour, ending now. The
-- baseline is read only for the tools that can pass the floor in the last
-- hour (as in MCPInvalidArgumentSpike): their distinct calls (exact) bound
-- the non-failed calls from above, the distinct calls less those with a
-- failed copy bound them from below, and EMPTY_RESULT rows bound the empty
-- results from above, so the test can only keep more tools, never fewer.
-- The baseline's complete hours come from their plain counts in
-- calls_5m_folded where a fold made at the hour's current insert count
-- holds them, the other hours from calls_5m's states, with the same counts
-- (queries/invalid_argument_baseline_rollup.sql; 1.7-2.3x faster over
-- 1,820 tools, BENCHMARKS.md, seventeenth round).
SELECT
  tenant_name,
  server_name,
  tool_name,
  if(base_empty = 0, toFloat64(1000), least(toFloat64(1000), (empty_n * base_ok) / (base_empty * ok_n))) AS spike_ratio
FROM (
  SELECT
    tenant_name,
    server_name,
    tool_name,
    toUInt64(sum(d_)) AS ok_n,
    toUInt64(sum(m_)) AS empty_n,
    toUInt64(sum(bd_)) AS base_ok,
    toUInt64(sum(bm_)) AS base_empty
  FROM (
    SELECT
      toString(tenant) AS tenant_name,
      toString(server) AS server_name,
      toString(tool) AS tool_name,
      toInt64(countIf(is_failure = 0)) AS d_,
      toInt64(countIf(category = 'EMPTY_RESULT')) AS m_,
      toInt64(0) AS bd_,
      toInt64(0) AS bm_
    FROM calls
    WHERE ts > $__toTime - 3600 AND ts <= $__toTime
    GROUP BY tenant_name, server_name, tool_name
    UNION ALL
    SELECT tenant_name, server_name, tool_name, -toInt64(s.3 = 0), -toInt64(s.2 = 'EMPTY_RESULT'), toInt64(0), toInt64(0)
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
      toInt64(sum(ok)),
      toInt64(sum(empty))
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
          AND countIf(category = 'EMPTY_RESULT') * 5 >= uniqExact(session_key, ts_ms, call_id) - uniqExactIf(session_key, ts_ms, call_id, is_failure = 1))
    GROUP BY tenant_name, server_name, tool_name
    UNION ALL
    SELECT
      toString(tenant) AS tenant_name,
      toString(server) AS server_name,
      toString(tool) AS tool_name,
      toInt64(0),
      toInt64(0),
      toInt64(uniqExactMergeIf(calls, is_failure = 0)),
      toInt64(uniqExactMergeIf(calls, category = 'EMPTY_RESULT'))
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
          AND countIf(category = 'EMPTY_RESULT') * 5 >= uniqExact(session_key, ts_ms, call_id) - uniqExactIf(session_key, ts_ms, call_id, is_failure = 1))
    GROUP BY tenant_name, server_name, tool_name
  )
  GROUP BY tenant_name, server_name, tool_name
)
WHERE ok_n >= 20 AND empty_n * 5 >= ok_n
ORDER BY tenant_name, server_name, tool_name
