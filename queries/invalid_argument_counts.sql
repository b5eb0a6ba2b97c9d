-- Calls and INVALID_ARGUMENT calls per tool and bucket of @step_s seconds
-- from @origin_s, over the calls of [@count_lo_s, @count_hi_ms) (@count_hi_s
-- is that bound's second, for the ts condition that prunes parts), of the
-- tools in @tools unless @all_tools = 1. The INVALID_ARGUMENT spikes
-- (invalid_argument_spikes.go) count the range with it, and the baseline too
-- when it is not read from the rollup. A call ingested more than once counts
-- once, as its latest ingest: every row, minus the copies a later ingest
-- replaced, found among the call ids that occur more than once (see
-- overview.sql for the method; it replaces FINAL).
SELECT tool_name, b AS bucket_s, toInt64(sum(n_)) AS calls_n, toInt64(sum(inv_)) AS invalid_n
FROM (
  SELECT
    CAST(tool AS String) AS tool_name,
    @origin_s + intDiv(toInt64(toUInt32(ts)) - @origin_s, @step_s) * @step_s AS b,
    toInt64(count()) AS n_,
    toInt64(countIf(category = 'INVALID_ARGUMENT')) AS inv_
  FROM calls
  WHERE ts >= toDateTime(@count_lo_s, 'UTC') AND ts <= toDateTime(@count_hi_s, 'UTC')
    AND ts_ms >= @count_lo_s * 1000 AND ts_ms < @count_hi_ms
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
    AND (@all_tools = 1 OR tool IN @tools)
  GROUP BY tool_name, b
  UNION ALL
  SELECT tool_name, @origin_s + intDiv(toInt64(s.2) - @origin_s, @step_s) * @step_s, toInt64(-1), -toInt64(s.3 = 'INVALID_ARGUMENT')
  FROM (
    SELECT
      CAST(tool AS String) AS tool_name,
      arrayPopFront(arraySort(x -> -x.1, groupArray((ingested_ms, toUInt32(ts), CAST(category AS String))))) AS stale
    FROM calls
    WHERE ts >= toDateTime(@count_lo_s, 'UTC') AND ts <= toDateTime(@count_hi_s, 'UTC')
      AND ts_ms >= @count_lo_s * 1000 AND ts_ms < @count_hi_ms
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND (@server = '' OR server = @server)
      AND (@tool = '' OR tool = @tool)
      AND (@all_tools = 1 OR tool IN @tools)
      AND call_id GLOBAL IN (
        SELECT call_id
        FROM calls
        WHERE ts >= toDateTime(@count_lo_s, 'UTC') AND ts <= toDateTime(@count_hi_s, 'UTC')
          AND ts_ms >= @count_lo_s * 1000 AND ts_ms < @count_hi_ms
          AND (@tenant = '' OR tenant = @tenant)
          AND (@all_tenants = 1 OR has(@tenants, tenant))
          AND (@server = '' OR server = @server)
          AND (@tool = '' OR tool = @tool)
          AND (@all_tools = 1 OR tool IN @tools)
        GROUP BY call_id
        HAVING count() > 1)
    GROUP BY tenant, server, tool, session_key, ts_ms, call_id
  )
  ARRAY JOIN stale AS s
)
GROUP BY tool_name, b
ORDER BY tool_name, bucket_s
