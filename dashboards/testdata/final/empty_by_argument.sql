-- Empty-result rate by query condition (queries/empty_results.sql): for each
-- tool and argument key=value (top-level keys exploded at ingest into
-- arg_keys/arg_values), the share of calls that did not fail (OK and
-- EMPTY_RESULT) yet found nothing. Conditions with fewer than min_calls such
-- calls are left out. One value far above its siblings (department=finace)
-- points at a misspelled or renamed enum value rather than at missing data.
SELECT
  tool AS tool_name,
  k AS arg_key,
  v AS arg_value,
  count() AS calls_n,
  countIf(category = 'EMPTY_RESULT') AS empty_n,
  countIf(category = 'EMPTY_RESULT') / count() AS empty_rate
FROM calls FINAL
ARRAY JOIN arg_keys AS k, arg_values AS v
WHERE $__timeFilter(ts)
  AND is_failure = 0
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  AND $__conditionalAll(k IN (${arg_key:singlequote}), $arg_key)
GROUP BY tool_name, arg_key, arg_value
HAVING calls_n >= ${min_calls}
ORDER BY empty_n DESC, empty_rate DESC, tool_name, arg_key, arg_value
LIMIT 200
