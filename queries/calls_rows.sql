-- The whole rows of GET /api/v1/calls' candidates (calls_page.sql,
-- calls_page_args.sql): every copy of each, within the seconds they span,
-- with whether it meets the conditions; the caller (queries/calls.go) keeps
-- a candidate when its latest ingest does. The candidates' call ids and
-- times are the PREWHERE, so that the heavy columns are read only in the
-- granules that hold one of them.
SELECT
  ts_ms,
  call_id,
  ingested_ms,
  duration_ms,
  CAST(tenant AS String) AS tenant_name,
  CAST(server AS String) AS server_name,
  CAST(tool AS String) AS tool_name,
  session_key,
  session_id,
  trace_id,
  request_id,
  CAST(client AS String) AS client_name,
  CAST(protocol_version AS String) AS protocol,
  CAST(source AS String) AS source_name,
  CAST(side AS String) AS side_name,
  args_json,
  has_response,
  is_error,
  rpc_error,
  rpc_code,
  rpc_message,
  CAST(result_type AS String) AS result,
  content_blocks,
  text_bytes,
  has_structured,
  message,
  CAST(category AS String) AS category_name,
  is_failure,
  declared_retryable,
  expected_retryable,
  CAST(class_source AS String) AS source_of_class,
  CAST(class_rule AS String) AS rule,
  error_code,
  misflagged,
  retry_after_ms,
  continuation,
  CAST(taxonomy_version AS String) AS taxonomy,
  toUInt8((@category = '' OR category = @category)
    AND (@failed = -1 OR is_failure = @failed)
    AND (@misflagged = -1 OR misflagged = @misflagged)
    AND (@any_code = 1 OR rpc_code = @code)
    AND (@arg_key = '' OR arrayExists((k, v) -> k = @arg_key AND (@any_value = 1 OR v = @arg_value), arg_keys, arg_values))) AS matches
FROM calls
PREWHERE call_id IN @page_ids AND ts_ms IN @page_times
WHERE ts >= toDateTime(@min_s, 'UTC') AND ts <= toDateTime(@max_s, 'UTC')
  AND (@tenant = '' OR tenant = @tenant)
  AND (@all_tenants = 1 OR has(@tenants, tenant))
  AND (@server = '' OR server = @server)
  AND (@tool = '' OR tool = @tool)
