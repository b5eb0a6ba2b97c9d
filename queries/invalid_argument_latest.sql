-- INVALID_ARGUMENT calls per tool and bucket of @step_s seconds from
-- @origin_s, over the calls of [@count_lo_s, @count_hi_ms) (@count_hi_s is
-- that bound's second, for the ts condition that prunes parts), of the tools
-- in @tools unless @all_tools = 1: the calls whose latest copy (largest
-- ingested_ms, the row FINAL keeps) is INVALID_ARGUMENT, without FINAL. Only
-- a call with an INVALID_ARGUMENT copy can be one, so those calls (a few
-- percent of the range) are found first and grouped by their identity (the
-- sort key). calls_n is 0: invalid_argument_counts.sql counts the calls, and
-- the INVALID_ARGUMENT spikes add the two (invalid_argument_spikes.go) for a
-- baseline not read from the rollup; the range's count comes with its top
-- arguments (invalid_argument_top_args.sql, the same calls).
SELECT
  tool_name,
  @origin_s + intDiv(toInt64(t) - @origin_s, @step_s) * @step_s AS bucket_s,
  toInt64(0) AS calls_n,
  toInt64(count()) AS invalid_n
FROM (
  SELECT
    CAST(tool AS String) AS tool_name,
    any(toUInt32(ts)) AS t,
    argMax(CAST(category AS String), ingested_ms) AS latest
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
        AND category = 'INVALID_ARGUMENT')
  GROUP BY tenant, server, tool, session_key, ts_ms, call_id
)
WHERE latest = 'INVALID_ARGUMENT'
GROUP BY tool_name, bucket_s
ORDER BY tool_name, bucket_s
