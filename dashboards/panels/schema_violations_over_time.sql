-- Calls that failed their tool's schema, per bucket of the panel interval,
-- by what happened: the server refused the arguments (INVALID_ARGUMENT),
-- accepted them (the call did not fail: bad input got through), failed
-- otherwise, or returned structured content its outputSchema rules out.
-- A call ingested more than once counts as its latest ingest, as under
-- FINAL but without it (queries/schema_violations.sql says why and how): the
-- violation rows are grouped by the table's sorting key first, and the
-- latest ingest's classification taken.
SELECT
  toDateTime(intDiv(toUInt32(ts_1), $__interval_s) * $__interval_s) AS time,
  multiIf(side_1 = 'result', 'result breaks outputSchema',
          invalid_1 = 1, 'arguments refused',
          failure_1 = 0, 'arguments accepted',
          'arguments, other failure') AS outcome,
  uniqExact(call_id) AS violating_calls
FROM (
  SELECT
    any(ts) AS ts_1,
    call_id,
    toString(side) AS side_1,
    argMax(toUInt8(category = 'INVALID_ARGUMENT'), ingested_ms) AS invalid_1,
    argMax(is_failure, ingested_ms) AS failure_1
  FROM call_violations
  WHERE $__timeFilter(ts)
    AND reason != ''
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY tenant, server, tool, ts_ms, call_id, side, path, reason
)
GROUP BY time, outcome
ORDER BY time, outcome
