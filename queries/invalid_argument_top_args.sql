-- The most frequent argument key=value pairs of INVALID_ARGUMENT calls per
-- tool in @tools and bucket (@step_s seconds from @origin_s), at most
-- @per_bucket per bucket: the values that a bad schema or a renamed enum
-- makes models send. InvalidArgumentSpikes asks for the tools that spiked
-- (every tool when @all_tools = 1).
-- A call ingested more than once counts once, as its latest ingest: the
-- counts of every row minus those of the copies a later ingest replaced (see
-- overview.sql for the method; it replaces FINAL). Only calls with an
-- INVALID_ARGUMENT copy can have a stale one to subtract, so the duplicate
-- call ids are looked for among those (a few percent of the calls) instead
-- of hashing every call id of the range.
SELECT
  tool_name,
  bucket_s,
  arg_key,
  arg_value,
  toUInt64(sum(w)) AS n
FROM (
  SELECT
    CAST(tool AS String) AS tool_name,
    @origin_s + intDiv(toInt64(toUInt32(ts)) - @origin_s, @step_s) * @step_s AS bucket_s,
    k AS arg_key,
    v AS arg_value,
    toInt64(count()) AS w
  FROM calls
  ARRAY JOIN arg_keys AS k, arg_values AS v
  WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
    AND ts_ms >= @from_ms AND ts_ms < @to_ms
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
    AND (@all_tools = 1 OR tool IN @tools)
    AND category = 'INVALID_ARGUMENT'
  GROUP BY tool, bucket_s, arg_key, arg_value
  UNION ALL
  SELECT tool_name, @origin_s + intDiv(toInt64(t) - @origin_s, @step_s) * @step_s, k, v, toInt64(-1)
  FROM (
    SELECT tool_name, s.2 AS t, s.4 AS ks, s.5 AS vs
    FROM (
      SELECT
        CAST(tool AS String) AS tool_name,
        arrayPopFront(arraySort(x -> -x.1, groupArray((ingested_ms, toUInt32(ts), CAST(category AS String), arg_keys, arg_values)))) AS stale
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
          GROUP BY call_id
          HAVING count() > 1)
      GROUP BY tenant, server, tool, session_key, ts_ms, call_id
    )
    ARRAY JOIN stale AS s
    WHERE s.3 = 'INVALID_ARGUMENT'
  )
  ARRAY JOIN ks AS k, vs AS v
)
GROUP BY tool_name, bucket_s, arg_key, arg_value
HAVING n > 0
ORDER BY tool_name, bucket_s, n DESC, arg_key, arg_value
LIMIT @per_bucket BY tool_name, bucket_s
