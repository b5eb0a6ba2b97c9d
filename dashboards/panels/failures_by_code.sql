-- Failures per second by category and error code, in buckets of the panel
-- interval (at least 5 minutes): the JSON-RPC code for protocol errors, else
-- the server's own error code, else tool_error (isError results) or
-- no_response. The code is computed at ingest by the view that feeds the
-- rollup calls_5m_classes (schema/018_calls_5m_classes_failed_mv.sql); each call
-- counted once (docs/dashboards.md).
SELECT
  toDateTime(intDiv(toUInt32(bucket), $__interval_s) * $__interval_s) AS time,
  toString(category) AS category_,
  code AS code_,
  uniqExactMerge(calls) / $__interval_s AS failures_per_s
FROM calls_5m_classes
WHERE $__timeFilter(bucket)
  AND is_failure = 1
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
GROUP BY time, category_, code_
ORDER BY time, category_, code_
