-- Per tool in @tools (every tool when @all_tools = 1) and bucket of @step_s
-- seconds from @origin_s, over the calls of [@count_lo_s, @count_hi_ms)
-- (@count_hi_s is that bound's second, for the ts condition that prunes
-- parts): the INVALID_ARGUMENT calls (kind 0, n; arg_key and arg_value
-- empty), then the argument key=value pairs they sent most (kind 1), the
-- values that a bad schema or a renamed enum makes models send:
-- @bucket_rows rows a bucket at most, its count and @bucket_rows - 1 pairs.
-- The INVALID_ARGUMENT spikes read both for their candidates at once: as
-- two statements each scanned the range's raw calls, and with the baseline
-- and the definition changes the four shared 2 cores (BENCHMARKS.md,
-- nineteenth round).
-- A call ingested more than once counts once, as its latest ingest (the row
-- FINAL keeps), without FINAL: only a call with an INVALID_ARGUMENT copy can
-- be one, so the calls with such a copy (a few percent of the range) are
-- found first, and each of them, grouped by its identity (the sort key),
-- counts when its latest copy (largest ingested_ms) is INVALID_ARGUMENT,
-- with that copy's arguments (invalid_argument_latest.sql counts the same
-- calls). Counting every INVALID_ARGUMENT row and subtracting the copies a
-- later ingest replaced, found by hashing the call ids of those calls' rows
-- (overview.sql's method), took 1.7-1.8x as long on 18.16 at 10M calls
-- (BENCHMARKS.md, sixteenth round).
SELECT tool_name, bucket_s, kind, arg_key, arg_value, toUInt64(count()) AS n
FROM (
  SELECT
    tool_name,
    @origin_s + intDiv(toInt64(t) - @origin_s, @step_s) * @step_s AS bucket_s,
    arrayConcat([(toUInt8(0), '', '')], arrayMap((k, v) -> (toUInt8(1), k, v), latest.2, latest.3)) AS rows_
  FROM (
    SELECT
      CAST(tool AS String) AS tool_name,
      any(toUInt32(ts)) AS t,
      argMax((CAST(category AS String), arg_keys, arg_values), ingested_ms) AS latest
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
  WHERE latest.1 = 'INVALID_ARGUMENT'
)
ARRAY JOIN rows_ AS row_
GROUP BY tool_name, bucket_s, row_.1 AS kind, row_.2 AS arg_key, row_.3 AS arg_value
ORDER BY tool_name, bucket_s, kind, n DESC, arg_key, arg_value
LIMIT @bucket_rows BY tool_name, bucket_s
