-- Failure rate per tool, failure category and JSON-RPC code: of all calls of a
-- tool in a bucket, the share that failed with that category and code. Buckets
-- are @step_s seconds from @from_s (one bucket covering the range when no step
-- is asked). A call ingested more than once counts once, as its latest ingest:
-- the counts of every row minus those of the copies a later ingest replaced
-- (see overview.sql for the method; it replaces FINAL). Relies on the
-- daily partitions for the time filter and on the (tenant, server, tool)
-- prefix of the sort key for the filters.
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
    SELECT bucket, tool_, cat, code_, f, toUInt64(sum(w)) AS n
    FROM (
      SELECT
        toDateTime(@from_s + intDiv(toInt64(toUInt32(ts)) - @from_s, @step_s) * @step_s, 'UTC') AS bucket,
        CAST(tool AS String) AS tool_,
        CAST(category AS String) AS cat,
        rpc_code AS code_,
        is_failure AS f,
        toInt64(count()) AS w
      FROM calls
      WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
        AND ts_ms >= @from_ms AND ts_ms < @to_ms
        AND (@tenant = '' OR tenant = @tenant)
        AND (@all_tenants = 1 OR has(@tenants, tenant))
        AND (@server = '' OR server = @server)
        AND (@tool = '' OR tool = @tool)
      GROUP BY bucket, tool, category, rpc_code, is_failure
      UNION ALL
      SELECT
        toDateTime(@from_s + intDiv(toInt64(s.2) - @from_s, @step_s) * @step_s, 'UTC'),
        tool_, s.3, s.4, s.5, toInt64(-1)
      FROM (
        SELECT
          CAST(tool AS String) AS tool_,
          arrayPopFront(arraySort(x -> -x.1, groupArray((ingested_ms, toUInt32(ts), CAST(category AS String), rpc_code, is_failure)))) AS stale
        FROM calls
        PREWHERE call_id GLOBAL IN (
          SELECT call_id
          FROM calls_copies_folded
          WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
            AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC'))
          UNION ALL
          SELECT call_id
          FROM calls
          WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
            AND ts_ms >= @from_ms AND ts_ms < @to_ms
            AND (@tenant = '' OR tenant = @tenant)
            AND (@all_tenants = 1 OR has(@tenants, tenant))
            AND (@server = '' OR server = @server)
            AND (@tool = '' OR tool = @tool)
            AND toStartOfHour(ts) GLOBAL NOT IN (
              SELECT hour
              FROM calls_copies_folded
              WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
                AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')))
          GROUP BY call_id
          HAVING count() > 1)
        WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
          AND ts_ms >= @from_ms AND ts_ms < @to_ms
          AND (@tenant = '' OR tenant = @tenant)
          AND (@all_tenants = 1 OR has(@tenants, tenant))
          AND (@server = '' OR server = @server)
          AND (@tool = '' OR tool = @tool)
        GROUP BY tenant, server, tool, session_key, ts_ms, call_id
      )
      ARRAY JOIN stale AS s
    )
    GROUP BY bucket, tool_, cat, code_, f
    HAVING sum(w) > 0
  )
  GROUP BY bucket, tool_
)
ARRAY JOIN g AS e
WHERE e.4 = 1
ORDER BY time, tool, category, code
