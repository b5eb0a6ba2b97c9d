-- The definition of the validated calls per tool, over call_violations
-- FINAL (see schema_violations_final.sql) and the calls that any ingest
-- marked args_validated (schema/024_calls_args_validated.sql).
SELECT
  tool_name,
  uniqExact(call_id) AS validated_n
FROM (
  SELECT CAST(tool AS String) AS tool_name, call_id
  FROM call_violations FINAL
  WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
    AND ts_ms >= @from_ms AND ts_ms < @to_ms
    AND side = 'arguments'
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
  UNION ALL
  SELECT CAST(tool AS String) AS tool_name, call_id
  FROM calls
  WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
    AND ts_ms >= @from_ms AND ts_ms < @to_ms
    AND args_validated = 1
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
)
GROUP BY tool_name
