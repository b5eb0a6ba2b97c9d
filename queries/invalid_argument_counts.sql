-- Calls and INVALID_ARGUMENT calls per tool and bucket of @step_s seconds
-- from @origin_s, over the calls of [@count_lo_s, @count_hi_ms) (@count_hi_s
-- is that bound's second, for the ts condition that prunes parts), of the
-- tools in @tools unless @all_tools = 1. The INVALID_ARGUMENT spikes
-- (invalid_argument_spikes.go) count the range with it, and the baseline too
-- when it is not read from the rollup. A call ingested more than once counts
-- once, as its latest ingest (the row FINAL keeps), without FINAL:
--   - the calls are the distinct call identities (the sort key's session_key,
--     ts_ms, call_id) per tenant, server, tool and bucket, all of which the
--     copies of a call share;
--   - the INVALID_ARGUMENT calls are the calls whose latest copy (largest
--     ingested_ms) is one, looked for only among the calls with an
--     INVALID_ARGUMENT copy, a few percent of the range, found first.
-- Counting every row and subtracting the copies a later ingest replaced
-- (overview.sql's method) hashed every call id of the range to find the
-- copies: 1.1-1.2x slower on 18.16 at 10M calls (BENCHMARKS.md,
-- fifteenth round).
SELECT tool_name, b AS bucket_s, toInt64(sum(n_)) AS calls_n, toInt64(sum(inv_)) AS invalid_n
FROM (
  SELECT
    CAST(tool AS String) AS tool_name,
    @origin_s + intDiv(toInt64(toUInt32(ts)) - @origin_s, @step_s) * @step_s AS b,
    toInt64(uniqExact(session_key, ts_ms, call_id)) AS n_,
    toInt64(0) AS inv_
  FROM calls
  WHERE ts >= toDateTime(@count_lo_s, 'UTC') AND ts <= toDateTime(@count_hi_s, 'UTC')
    AND ts_ms >= @count_lo_s * 1000 AND ts_ms < @count_hi_ms
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
    AND (@all_tools = 1 OR tool IN @tools)
  GROUP BY tenant, server, tool, b
  UNION ALL
  SELECT tool_name, @origin_s + intDiv(toInt64(t) - @origin_s, @step_s) * @step_s, toInt64(0), toInt64(latest = 'INVALID_ARGUMENT')
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
)
GROUP BY tool_name, b
ORDER BY tool_name, bucket_s
