SELECT
  ts AS time,
  category_ AS category,
  code_ AS code,
  is_error_ AS is_error,
  misflagged_ AS misflagged,
  rule_ AS rule,
  message_ AS message,
  args_json AS arguments,
  duration_ms_ AS duration_ms,
  session_key_ AS session,
  trace_id_ AS trace_id,
  toString(call_id) AS call
FROM (
  SELECT
    ts,
    ts_ms,
    call_id,
    CAST(category AS String) AS category_,
    if(is_failure = 1, multiIf(rpc_error = 1, toString(rpc_code), error_code != '', error_code, has_response = 0, 'no_response', 'tool_error'), '') AS code_,
    is_error AS is_error_,
    misflagged AS misflagged_,
    CAST(class_rule AS String) AS rule_,
    message AS message_,
    args_json,
    duration_ms AS duration_ms_,
    session_key AS session_key_,
    trace_id AS trace_id_
  FROM calls FINAL
  WHERE $__timeFilter(ts)
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
    AND $__conditionalAll(session_key = decodeURLComponent('${session:percentencode}'), $session)
    AND $__conditionalAll(category IN (${category:singlequote}), $category)
    AND $__conditionalAll(has(arg_values, decodeURLComponent('${arg_value:percentencode}')), $arg_value)
    AND $__conditionalAll(('${arg_value:percentencode}' = '' OR arrayExists((k, v) -> k IN (${arg_key:singlequote}) AND v = decodeURLComponent('${arg_value:percentencode}'), arg_keys, arg_values)), $arg_key)
)
ORDER BY ts_ms DESC, call_id DESC
LIMIT 100
