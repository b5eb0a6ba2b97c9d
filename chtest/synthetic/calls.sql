-- Synthetic calls for the scale benchmarks, generated inside the engine: @n
-- calls in sessions of 25 calls 4 s apart, sessions spread evenly over the
-- @span_ms before @end_ms; 20 tenants, 7 servers, 13 tools in each of the 140
-- (tenant, server) pairs, the 1,820 triples named tool0 to
-- tool<@tool_names-1> in turn (13: the same 13 names on every server; 1820: a
-- name of its own for each triple); about 70 % OK, 15 % EMPTY_RESULT and 15 % failures over
-- six categories, with retries (a failed call's session repeats the tool),
-- two argument keys per call and five clients (one a session, in turn); the
-- RATE_LIMITED calls carry a retry-after hint of 1 to 8 s (the session's calls are 4 s apart, so about half of them are
-- re-called before it). 0.2 % of the calls (u) asked for a tool the server
-- does not have and were refused with -32602 as UNKNOWN_TOOL: the session's
-- tool name with an "s" added, behind the client's "mcp__<server>__" prefix
-- or a "get_" one, or summon_dragon; their arguments were not validated (no
-- schema). @kept_failures_pct of the failures stay failures (100: 15 % of the
-- calls failed); the others become OK calls, everything about them derived
-- from their new class as for any OK call: a healthier fleet. Every other
-- call's arguments were validated (args_validated; synthetic/violations.sql).
INSERT INTO calls (ts, ts_ms, duration_ms, tenant, server, tool, session_id, session_key,
  trace_id, request_id, call_id, client, protocol_version, source, side,
  args_json, args_hash, arg_keys, arg_values,
  has_response, is_error, rpc_error, rpc_code, rpc_message, result_type,
  content_blocks, text_bytes, has_structured, message,
  category, is_failure, declared_retryable, expected_retryable, class_source,
  class_rule, error_code, misflagged, retry_after_ms, continuation, args_validated,
  taxonomy_version, ingested_ms)
SELECT
  toDateTime(intDiv(t, 1000), 'UTC') AS ts_, t AS ts_ms_, 100 + h % 900 AS duration_ms_,
  concat('t', toString(s % 20)) AS tenant_, concat('srv', toString(s % 7)) AS server_,
  if(u, multiIf(intDiv(h, 500000) % 4 = 0, concat(tool, 's'),
                intDiv(h, 500000) % 4 = 1, concat('mcp__srv', toString(s % 7), '__', tool),
                intDiv(h, 500000) % 4 = 2, concat('get_', tool), 'summon_dragon'), tool) AS tool_,
  concat('s', toString(s)) AS session_id_, concat('s', toString(s)) AS session_key_,
  '' AS trace_id_, toString(number % 25) AS request_id_, cityHash64(number) AS call_id_,
  arrayElement(['claude-desktop', 'cursor', 'python-sdk', 'typescript-sdk', 'stateless-agent'], s % 5 + 1) AS client_, '2025-06-18' AS protocol_version_, 'capture' AS source_, '' AS side_,
  concat('{"department":"d', toString(h % 9), '","q":"q', toString(h % 50), '"}') AS args_json_,
  cityHash64(concat(toString(h % 9), '/', toString(h % 50))) AS args_hash_,
  ['department', 'q'] AS arg_keys_, [concat('d', toString(h % 9)), concat('q', toString(h % 50))] AS arg_values_,
  1 AS has_response_, toInt8(if(u OR c >= 85, 1, 0)) AS is_error_, toUInt8(u OR c >= 97) AS rpc_error_,
  toInt64(if(u OR c >= 97, -32602, 0)) AS rpc_code_, '' AS rpc_message_, 'complete' AS result_type_,
  toInt32(1) AS content_blocks_, toInt64(200) AS text_bytes_, toUInt8(0) AS has_structured_, '' AS message_,
  multiIf(u, 'UNKNOWN_TOOL', c < 70, 'OK', c < 85, 'EMPTY_RESULT', c < 88, 'RATE_LIMITED', c < 91, 'UPSTREAM_TIMEOUT',
          c < 93, 'UNAVAILABLE', c < 95, 'UNAUTHENTICATED', c < 97, 'INTERNAL', 'INVALID_ARGUMENT') AS category_,
  toUInt8(u OR c >= 85) AS is_failure_, toInt8(-1) AS declared_retryable_,
  toInt8(if(NOT u AND (c >= 85 AND c < 93 OR c >= 95 AND c < 97), 1, 0)) AS expected_retryable_,
  'default' AS class_source_, '' AS class_rule_, '' AS error_code_, toUInt8(NOT u AND c >= 70 AND c < 72) AS misflagged_,
  toInt64(if(NOT u AND c >= 85 AND c < 88, 1000 * (1 + h % 8), 0)) AS retry_after_ms_, toUInt8(0) AS continuation_, toUInt8(NOT u) AS args_validated_, 'bench' AS taxonomy_version_, toInt64(1) AS ingested_ms_
FROM (
  SELECT number, intDiv(number, 25) AS s, cityHash64(number, 7) AS h,
         concat('tool', toString(((s % 140) * 13 + intDiv(number % 25, 5) + (s % 3) * 4) % @tool_names)) AS tool,
         intDiv(h, 1000) % 500 = 0 AS u,
         if(h % 100 >= 85 AND intDiv(h, 100) % 100 >= @kept_failures_pct, h % 100 - 85, h % 100) AS c,
         @end_ms - @span_ms + intDiv(s * @span_ms, @sessions) + (number % 25) * 4000 AS t
  FROM numbers(@n)
)
