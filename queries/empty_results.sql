-- Empty-result rate by query condition: for each tool and each argument
-- key=value (top-level keys; nested objects flattened to dotted keys at
-- ingest), the share of non-failed calls (OK + EMPTY_RESULT) that found
-- nothing. A high rate on one value (department=finace) points at a misspelled
-- or renamed enum value rather than at missing data. arg_keys/arg_values were
-- exploded at ingest because 18.16 cannot enumerate JSON keys. A call
-- ingested more than once counts once, as its latest ingest: the counts of
-- every row minus those of the copies a later ingest replaced (see
-- overview.sql for the method; it replaces FINAL).
SELECT
  tool_name,
  arg_key,
  arg_value,
  toUInt64(sum(n)) AS calls_n,
  toUInt64(sum(e)) AS empty_n
FROM (
  SELECT
    CAST(tool AS String) AS tool_name,
    k AS arg_key,
    v AS arg_value,
    toInt64(count()) AS n,
    toInt64(countIf(category = 'EMPTY_RESULT')) AS e
  FROM calls
  ARRAY JOIN arg_keys AS k, arg_values AS v
  WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
    AND ts_ms >= @from_ms AND ts_ms < @to_ms
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
    AND is_failure = 0
    AND (@arg_key = '' OR k = @arg_key)
  GROUP BY tool, arg_key, arg_value
  UNION ALL
  SELECT tool_name, k, v, toInt64(-1), -toInt64(cat = 'EMPTY_RESULT')
  FROM (
    SELECT tool_name, s.3 AS cat, s.4 AS ks, s.5 AS vs
    FROM (
      SELECT
        CAST(tool AS String) AS tool_name,
        arrayPopFront(arraySort(x -> -x.1, groupArray((ingested_ms, is_failure, CAST(category AS String), arg_keys, arg_values)))) AS stale
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
    WHERE s.2 = 0
  )
  ARRAY JOIN ks AS k, vs AS v
  WHERE @arg_key = '' OR k = @arg_key
)
GROUP BY tool_name, arg_key, arg_value
HAVING calls_n >= @min_calls
ORDER BY empty_n DESC, empty_n / calls_n DESC, tool_name, arg_key, arg_value
LIMIT @limit
