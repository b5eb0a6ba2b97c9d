-- Empty-result rate by query condition: for each tool and each argument
-- key=value (top-level keys; nested objects flattened to dotted keys at
-- ingest), the share of non-failed calls (OK + EMPTY_RESULT) that found
-- nothing. A high rate on one value (department=finace) points at a misspelled
-- or renamed enum value rather than at missing data. Reads calls FINAL so a
-- re-ingested call counts once; arg_keys/arg_values were exploded at ingest
-- because 18.16 cannot enumerate JSON keys.
SELECT
  tool AS tool_name,
  k AS arg_key,
  v AS arg_value,
  count() AS calls_n,
  countIf(category = 'EMPTY_RESULT') AS empty_n
FROM calls FINAL
ARRAY JOIN arg_keys AS k, arg_values AS v
WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
  AND ts_ms >= @from_ms AND ts_ms < @to_ms
  AND (@tenant = '' OR tenant = @tenant)
  AND (@server = '' OR server = @server)
  AND (@tool = '' OR tool = @tool)
  AND is_failure = 0
  AND (@arg_key = '' OR k = @arg_key)
GROUP BY tool_name, arg_key, arg_value
HAVING calls_n >= @min_calls
ORDER BY empty_n DESC, empty_n / calls_n DESC, tool_name, arg_key, arg_value
LIMIT @limit
