-- The panel's SQL as it was with call_violations FINAL: the definition
-- TestSchemaPanelsMatchTheirFinalForms compares the panel with.
-- Calls that failed their tool's schema, per bucket of the panel interval,
-- by what happened: the server refused the arguments (INVALID_ARGUMENT),
-- accepted them (the call did not fail: bad input got through), failed
-- otherwise, or returned structured content its outputSchema rules out.
SELECT
  toDateTime(intDiv(toUInt32(ts), $__interval_s) * $__interval_s) AS time,
  multiIf(side = 'result', 'result breaks outputSchema',
          category = 'INVALID_ARGUMENT', 'arguments refused',
          is_failure = 0, 'arguments accepted',
          'arguments, other failure') AS outcome,
  uniqExact(call_id) AS violating_calls
FROM call_violations FINAL
WHERE $__timeFilter(ts)
  AND reason != ''
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
GROUP BY time, outcome
ORDER BY time, outcome
