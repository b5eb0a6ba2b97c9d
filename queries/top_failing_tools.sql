-- The tools with the most failures in the range, with their calls and
-- failure rate; ties broken by name.
SELECT
  tool AS tool_name,
  count() AS calls_n,
  sum(is_failure) AS failures_n
FROM calls FINAL
WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
  AND ts_ms >= @from_ms AND ts_ms < @to_ms
  AND (@tenant = '' OR tenant = @tenant)
  AND (@server = '' OR server = @server)
  AND (@tool = '' OR tool = @tool)
GROUP BY tool_name
HAVING failures_n > 0
ORDER BY failures_n DESC, tool_name
LIMIT @limit
