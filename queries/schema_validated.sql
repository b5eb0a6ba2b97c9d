-- Validated calls per tool in [from, to): calls whose arguments were checked
-- against a definition in force at their time (call_violations rows of side
-- arguments: the violations of a failing call, or the one empty row of a
-- passing call), the denominator of a schema violation's share. Calls before
-- their tool's first known definition, and OTLP calls whose arguments the
-- trace did not carry, are not validated and not counted.
-- A call ingested more than once counts once: its copies share tool and
-- call_id, so counting distinct call ids over every row gives what
-- call_violations FINAL would, without FINAL's merge of the range on 18.16.
SELECT
  toString(tool) AS tool_name,
  uniqExact(call_id) AS validated_n
FROM call_violations
WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
  AND ts_ms >= @from_ms AND ts_ms < @to_ms
  AND side = 'arguments'
  AND (@tenant = '' OR tenant = @tenant)
  AND (@all_tenants = 1 OR has(@tenants, tenant))
  AND (@server = '' OR server = @server)
  AND (@tool = '' OR tool = @tool)
GROUP BY tool_name
