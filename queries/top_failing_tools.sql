-- The tools with the most failures in the range, with their calls and
-- failure rate; ties broken by name. A call ingested more than once counts
-- once, as its latest ingest: every row's counts minus those of the copies a
-- later ingest replaced (see overview_totals.sql for the method).
SELECT
  tool_name,
  toUInt64(sum(n)) AS calls_n,
  toUInt64(sum(fail)) AS failures_n
FROM (
  SELECT CAST(tool AS String) AS tool_name, toInt64(count()) AS n, toInt64(sum(is_failure)) AS fail
  FROM calls
  WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
    AND ts_ms >= @from_ms AND ts_ms < @to_ms
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
  GROUP BY tool
  UNION ALL
  SELECT tool_name, toInt64(-1), -toInt64(s.2)
  FROM (
    SELECT
      CAST(tool AS String) AS tool_name,
      arrayPopFront(arraySort(x -> -x.1, groupArray((ingested_ms, is_failure)))) AS stale
    FROM calls
    WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
      AND ts_ms >= @from_ms AND ts_ms < @to_ms
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND (@server = '' OR server = @server)
      AND (@tool = '' OR tool = @tool)
      AND call_id GLOBAL IN (
        SELECT call_id
        FROM calls
        WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
          AND ts_ms >= @from_ms AND ts_ms < @to_ms
          AND (@tenant = '' OR tenant = @tenant)
          AND (@all_tenants = 1 OR has(@tenants, tenant))
          AND (@server = '' OR server = @server)
          AND (@tool = '' OR tool = @tool)
        GROUP BY call_id
        HAVING count() > 1)
    GROUP BY tenant, server, tool, session_key, ts_ms, call_id
  )
  ARRAY JOIN stale AS s
)
GROUP BY tool_name
HAVING failures_n > 0
ORDER BY failures_n DESC, tool_name
LIMIT @limit
