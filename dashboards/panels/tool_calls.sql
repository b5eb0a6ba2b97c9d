-- The tool's most recent calls, at most 100, newest first, each as its
-- latest ingest stored it: what the model sent (arguments as canonical
-- JSON, redacted at ingest), what came back (isError as sent, the error
-- code as failures_by_code.sql computes it, the message) and how mcplens
-- classified it (category, misflagged, the rule). The category variable
-- keeps the calls whose latest ingest has one of the chosen categories; a
-- value in arg_value keeps those whose arguments have it under one of the
-- chosen argument keys (every key when arg_key is All); a session key in
-- session keeps that session's calls (the session id, else the trace id,
-- as the retry chains group calls). Text values are passed percent-encoded
-- and decoded here, so that no character of them can end the string
-- literal (Grafana's quoting formats escape the quote but not the
-- backslash, which ClickHouse reads as an escape).
--
-- A re-ingested call is listed once, as its latest ingest, without FINAL:
-- the inner statement groups the range's rows of the tool by call (time
-- and call id, the identity as GET /api/v1/calls keys it) from the light
-- columns, keeps the calls whose latest copy meets the conditions and
-- takes the 100 newest; the outer one reads the heavy columns (arguments,
-- messages) of those calls only, their time and call id as its PREWHERE
-- (with the set in its WHERE: 1.4-1.8x slower over 24 hours of 10M calls
-- on both engines, BENCHMARKS.md, forty-ninth round). Every call of the
-- tool in the range is grouped, so the cost grows with the range (1.1-1.7
-- s on 18.16 over 7 days of 10M calls).
SELECT
  l.1 AS time,
  l.2 AS category,
  l.3 AS code,
  l.4 AS is_error,
  l.5 AS misflagged,
  l.6 AS rule,
  l.7 AS message,
  l.8 AS arguments,
  l.9 AS duration_ms,
  l.10 AS session,
  l.11 AS trace_id,
  toString(call_id) AS call
FROM (
  SELECT
    ts_ms,
    call_id,
    argMax((
      ts,
      CAST(category AS String),
      if(is_failure = 1, multiIf(rpc_error = 1, toString(rpc_code), error_code != '', error_code, has_response = 0, 'no_response', 'tool_error'), ''),
      is_error,
      misflagged,
      CAST(class_rule AS String),
      message,
      args_json,
      duration_ms,
      session_key,
      trace_id), ingested_ms) AS l
  FROM calls
  PREWHERE (ts_ms, call_id) GLOBAL IN (
      SELECT ts_ms, call_id
      FROM calls
      WHERE $__timeFilter(ts)
        AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
        AND $__conditionalAll(server IN (${server:singlequote}), $server)
        AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
        AND $__conditionalAll(session_key = decodeURLComponent('${session:percentencode}'), $session)
      GROUP BY ts_ms, call_id
      HAVING argMax(toUInt8($__conditionalAll(category IN (${category:singlequote}), $category)
        AND $__conditionalAll(has(arg_values, decodeURLComponent('${arg_value:percentencode}')), $arg_value)
        AND $__conditionalAll(('${arg_value:percentencode}' = '' OR arrayExists((k, v) -> k IN (${arg_key:singlequote}) AND v = decodeURLComponent('${arg_value:percentencode}'), arg_keys, arg_values)), $arg_key)), ingested_ms) = 1
      ORDER BY ts_ms DESC, call_id DESC
      LIMIT 100)
  WHERE $__timeFilter(ts)
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY ts_ms, call_id
)
ORDER BY ts_ms DESC, call_id DESC
