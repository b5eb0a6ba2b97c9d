-- The argument key=value pairs most often sent with INVALID_ARGUMENT calls,
-- at most 10 per tool (queries/invalid_argument_top_args.sql without the
-- buckets): the values that a bad schema or a renamed enum makes models send.
SELECT
  tool AS tool_name,
  k AS arg_key,
  v AS arg_value,
  count() AS invalid_n,
  uniqExact(session_key) AS sessions_n
FROM calls FINAL
ARRAY JOIN arg_keys AS k, arg_values AS v
WHERE $__timeFilter(ts)
  AND category = 'INVALID_ARGUMENT'
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
GROUP BY tool_name, arg_key, arg_value
ORDER BY tool_name, invalid_n DESC, arg_key, arg_value
LIMIT 10 BY tool_name
