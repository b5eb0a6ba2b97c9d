-- Validated calls per tool in [from, to): calls whose arguments were checked
-- against a definition in force at their time, the denominator of a schema
-- violation's share. A call is validated when any of its ingests says so:
-- args_validated 1 on its calls row (schema/024_calls_args_validated.sql),
-- or, from ingests before that migration, a call_violations row of side
-- arguments (its violations, or the one empty row a passing call had).
-- Calls before their tool's first known definition, and OTLP calls whose
-- arguments the trace did not carry, are not validated and not counted.
-- A call ingested more than once counts once: its copies share tool and
-- call_id, so counting distinct call ids over every row of both tables
-- gives what their FINAL forms would, without FINAL's merge of the range on
-- 18.16.
-- The hours that lie whole in [from, to) and that the retention job has
-- folded come from the fold's validated calls per tool (violations_folded's
-- rows with an empty reason, a current fold with its mark), the other hours
-- from the raw rows: a call belongs to one hour, so the counts add up
-- (BENCHMARKS.md, twenty-seventh round).
SELECT tool_name, sum(n) AS validated_n
FROM (
  SELECT
    tool_name,
    uniqExact(call_id) AS n
  FROM (
    SELECT
      CAST(tool AS String) AS tool_name,
      call_id
    FROM calls
    PREWHERE toStartOfHour(ts) GLOBAL NOT IN (
        SELECT hour
        FROM violations_folded
        WHERE side = ''
          AND hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
          AND toInt64(toUInt32(hour)) * 1000 >= @from_ms AND (toInt64(toUInt32(hour)) + 3600) * 1000 <= @to_ms
          AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
    WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
      AND ts_ms >= @from_ms AND ts_ms < @to_ms
      AND args_validated = 1
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND (@server = '' OR server = @server)
      AND (@tool = '' OR tool = @tool)
    UNION ALL
    SELECT
      CAST(tool AS String) AS tool_name,
      call_id
    FROM call_violations
    PREWHERE toStartOfHour(ts) GLOBAL NOT IN (
        SELECT hour
        FROM violations_folded
        WHERE side = ''
          AND hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
          AND toInt64(toUInt32(hour)) * 1000 >= @from_ms AND (toInt64(toUInt32(hour)) + 3600) * 1000 <= @to_ms
          AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
    WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
      AND ts_ms >= @from_ms AND ts_ms < @to_ms
      AND side = 'arguments'
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND (@server = '' OR server = @server)
      AND (@tool = '' OR tool = @tool)
  )
  GROUP BY tool_name
  UNION ALL
  SELECT
    CAST(tool AS String) AS tool_name,
    sum(calls) AS n
  FROM violations_folded
  PREWHERE (hour, fold) GLOBAL IN (
      SELECT hour, fold
      FROM violations_folded
      WHERE side = ''
        AND hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
        AND toInt64(toUInt32(hour)) * 1000 >= @from_ms AND (toInt64(toUInt32(hour)) + 3600) * 1000 <= @to_ms
        AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
  WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
    AND side = 'arguments' AND reason = ''
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
  GROUP BY tool_name
)
GROUP BY tool_name
