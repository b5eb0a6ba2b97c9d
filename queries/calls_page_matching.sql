-- One page of GET /api/v1/calls with conditions on the calls'
-- classification or arguments, which a call meets when its latest ingest
-- does (a call re-ingested with another category is where its latest ingest
-- puts it, as in every answer). The rows read are every copy of the calls
-- with at least one copy that meets them (the GLOBAL IN: in cluster mode it
-- reads Distributed tables, which each shard may not read again), each with
-- whether it meets them; as calls_page.sql, newest call first, its latest
-- ingest first, and the caller (queries/calls.go) keeps a call when its
-- first row meets them.
SELECT
  ts_ms,
  call_id,
  ingested_ms,
  toUInt8((@category = '' OR category = @category)
    AND (@failed = -1 OR is_failure = @failed)
    AND (@misflagged = -1 OR misflagged = @misflagged)
    AND (@any_code = 1 OR rpc_code = @code)
    AND (@arg_key = '' OR arrayExists((k, v) -> k = @arg_key AND (@any_value = 1 OR v = @arg_value), arg_keys, arg_values))) AS matches
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
  AND call_id GLOBAL IN (
    SELECT call_id
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
      AND (@arg_key = '' OR arrayExists((k, v) -> k = @arg_key AND (@any_value = 1 OR v = @arg_value), arg_keys, arg_values)))
ORDER BY ts_ms DESC, call_id DESC, ingested_ms DESC
LIMIT @fetch
