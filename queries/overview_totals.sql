-- Header totals for the range: calls, failures, empty results (of the
-- non-failed calls), calls whose isError contradicts their class, and how many
-- tools and sessions they span. Reads calls FINAL so re-ingested calls count once.
SELECT
  count() AS calls_n,
  sum(is_failure) AS failures_n,
  countIf(is_failure = 0) AS non_failed_n,
  countIf(category = 'EMPTY_RESULT') AS empty_n,
  sum(misflagged) AS misflagged_n,
  uniqExact(tool) AS tools_n,
  uniqExact(session_key) AS sessions_n
FROM calls FINAL
WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
  AND ts_ms >= @from_ms AND ts_ms < @to_ms
  AND (@tenant = '' OR tenant = @tenant)
  AND (@server = '' OR server = @server)
  AND (@tool = '' OR tool = @tool)
