-- The most frequent argument key=value pairs of INVALID_ARGUMENT calls per
-- tool in @tools and bucket (@step_s seconds from @origin_s), at most
-- @per_bucket per bucket: the values that a bad schema or a renamed enum
-- makes models send. InvalidArgumentSpikes asks for the tools that spiked
-- (every tool when @all_tools = 1).
-- A call ingested more than once counts once, as its latest ingest (the row
-- FINAL keeps), without FINAL: only a call with an INVALID_ARGUMENT copy can
-- be one, so the calls with such a copy (a few percent of the range) are
-- found first, and each of them, grouped by its identity (the sort key),
-- counts when its latest copy (largest ingested_ms) is INVALID_ARGUMENT,
-- with that copy's arguments. Counting every INVALID_ARGUMENT row and
-- subtracting the copies a later ingest replaced, found by hashing the call
-- ids of those calls' rows (overview.sql's method), took 1.7-1.8x as long on
-- 18.16 at 10M calls (BENCHMARKS.md, sixteenth round).
SELECT tool_name, bucket_s, arg_key, arg_value, toUInt64(count()) AS n
FROM (
  SELECT
    tool_name,
    @origin_s + intDiv(toInt64(t) - @origin_s, @step_s) * @step_s AS bucket_s,
    latest.2 AS keys_,
    latest.3 AS values_
  FROM (
    SELECT
      CAST(tool AS String) AS tool_name,
      any(toUInt32(ts)) AS t,
      argMax((CAST(category AS String), arg_keys, arg_values), ingested_ms) AS latest
    FROM calls
    WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
      AND ts_ms >= @from_ms AND ts_ms < @to_ms
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND (@server = '' OR server = @server)
      AND (@tool = '' OR tool = @tool)
      AND (@all_tools = 1 OR tool IN @tools)
      AND call_id GLOBAL IN (
        SELECT call_id
        FROM calls
        WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
          AND ts_ms >= @from_ms AND ts_ms < @to_ms
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
ARRAY JOIN keys_ AS arg_key, values_ AS arg_value
GROUP BY tool_name, bucket_s, arg_key, arg_value
ORDER BY tool_name, bucket_s, n DESC, arg_key, arg_value
LIMIT @per_bucket BY tool_name, bucket_s
