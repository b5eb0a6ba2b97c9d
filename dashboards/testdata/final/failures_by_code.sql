-- Failures per second by category and error code, in buckets of the panel
-- interval: the JSON-RPC code for protocol errors, else the server's own
-- error code, else tool_error (isError results) or no_response.
SELECT
  toDateTime(intDiv(toUInt32(ts), $__interval_s) * $__interval_s) AS time,
  toString(category) AS category_,
  multiIf(rpc_error = 1, toString(rpc_code), error_code != '', error_code, has_response = 0, 'no_response', 'tool_error') AS code,
  count() / $__interval_s AS failures_per_s
FROM calls FINAL
WHERE $__timeFilter(ts)
  AND is_failure = 1
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
GROUP BY time, category_, code
ORDER BY time, category_, code
