-- One page of GET /api/v1/calls' candidates when it has a condition on the
-- arguments (calls_page.sql otherwise, which reads no argument array: one
-- file with this condition behind the bound key made 18.16 read the arrays
-- for every page, 1.2-1.3x as long; BENCHMARKS.md, forty-eighth round): the
-- range's rows that meet every condition, light columns only, newest call
-- first and, within a call, its latest ingest first. A call's copies
-- (ingested more than once) share its time and id, so they come together;
-- the caller (queries/calls.go) takes each call's first row and checks with
-- calls_rows.sql that the call's latest ingest, which may not meet the
-- conditions (a call reclassified by a later ingest), is the one it took. A
-- condition is met by one pass over the range's rows whatever share of them
-- meets it; the heavy columns (arguments, messages) are read for the page's
-- calls only.
SELECT
  ts_ms,
  call_id,
  ingested_ms
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
  AND (@category = '' OR category = @category)
  AND (@failed = -1 OR is_failure = @failed)
  AND (@misflagged = -1 OR misflagged = @misflagged)
  AND (@any_code = 1 OR rpc_code = @code)
  AND arrayExists((k, v) -> k = @arg_key AND (@any_value = 1 OR v = @arg_value), arg_keys, arg_values)
ORDER BY ts_ms DESC, call_id DESC, ingested_ms DESC
LIMIT @fetch
