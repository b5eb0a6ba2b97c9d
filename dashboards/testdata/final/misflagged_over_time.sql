-- Misflagged calls per bucket of the panel interval, by direction: hidden
-- failures (a failure category sent with isError false or absent, so clients
-- take it for a success) and false alarms (a non-failure flagged isError).
SELECT
  toDateTime(intDiv(toUInt32(ts), $__interval_s) * $__interval_s) AS time,
  if(is_failure = 1, 'hidden_failure', 'false_alarm') AS direction,
  count() AS misflagged_n
FROM calls FINAL
WHERE $__timeFilter(ts)
  AND misflagged = 1
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
GROUP BY time, direction
ORDER BY time, direction
