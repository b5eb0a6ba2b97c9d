-- Failure rate per tool, failure category and JSON-RPC code: of all calls of a
-- tool in a bucket, the share that failed with that category and code. Buckets
-- are @step_s seconds from @from_s (one bucket covering the range when no step
-- is asked). Reads calls FINAL so that a re-ingested call counts once; relies
-- on the daily partitions for the time filter and on the (tenant, server,
-- tool) prefix of the sort key for the filters.
SELECT
  bucket AS time,
  tool_ AS tool,
  e.1 AS category,
  e.2 AS code,
  calls_ AS calls,
  e.3 AS failures,
  e.3 / calls_ AS rate
FROM (
  SELECT bucket, tool_, sum(n) AS calls_, groupArray((cat, code_, n, f)) AS g
  FROM (
    SELECT
      toDateTime(@from_s + intDiv(toInt64(toUInt32(ts)) - @from_s, @step_s) * @step_s, 'UTC') AS bucket,
      tool AS tool_,
      category AS cat,
      rpc_code AS code_,
      is_failure AS f,
      count() AS n
    FROM calls FINAL
    WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
      AND ts_ms >= @from_ms AND ts_ms < @to_ms
      AND (@tenant = '' OR tenant = @tenant)
      AND (@server = '' OR server = @server)
      AND (@tool = '' OR tool = @tool)
    GROUP BY bucket, tool_, cat, code_, f
  )
  GROUP BY bucket, tool_
)
ARRAY JOIN g AS e
WHERE e.4 = 1
ORDER BY time, tool, category, code
