-- One page of GET /api/v1/calls without a condition on the calls'
-- classification: the light columns of the range's rows, newest call first
-- and, within a call, its latest ingest first. A call's copies (ingested
-- more than once) share its time and id, so they come together, and the
-- caller (queries/calls.go) keeps each call's first row, its latest ingest.
-- It asks again from the last row on when copies left the page short. The
-- heavy columns (arguments, messages) of the page's calls only are read by
-- calls_rows.sql: reading them with the range's sort would read every row's.
SELECT
  ts_ms,
  call_id,
  ingested_ms,
  toUInt8(1) AS matches
FROM calls
WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
  AND ts_ms >= @from_ms AND ts_ms < @to_ms
  AND (ts_ms < @before_ms OR ts_ms = @before_ms AND call_id < @before_id)
  AND (@tenant = '' OR tenant = @tenant)
  AND (@all_tenants = 1 OR has(@tenants, tenant))
  AND (@server = '' OR server = @server)
  AND (@tool = '' OR tool = @tool)
  AND (@session = '' OR session_key = @session)
  AND (@trace_id = '' OR trace_id = @trace_id)
ORDER BY ts_ms DESC, call_id DESC, ingested_ms DESC
LIMIT @fetch
