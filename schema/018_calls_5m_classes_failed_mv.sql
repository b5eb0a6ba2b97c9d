-- Feeds calls_5m_classes with the calls that are failed or misflagged only,
-- replacing calls_5m_classes_mv (migration 010, dropped by 019), which fed it
-- every call. Every reader of calls_5m_classes selects failed or misflagged
-- calls (the failure-code, misflagged and misclassification panels; the
-- misclassification panel's call totals come from calls_5m), and the rollup's
-- uniqExact states of call ids cost the server CPU at every merge in
-- proportion to the ids they hold: about 1 µs a call for every call, now for
-- the failed share only (BENCHMARKS.md). Both views may run for the moment
-- between this migration and the next: the states hold distinct call ids, so
-- a call that both write counts once. Rows written before this migration keep
-- their calls that are neither; readers select them out.
CREATE MATERIALIZED VIEW IF NOT EXISTS calls_5m_classes_failed_mv TO calls_5m_classes AS
SELECT
  toDateTime(intDiv(toUInt32(ts), 300) * 300, 'UTC') AS bucket,
  tenant,
  server,
  tool,
  category,
  is_failure,
  misflagged,
  if(is_failure = 1, multiIf(rpc_error = 1, toString(rpc_code), error_code != '', error_code, has_response = 0, 'no_response', 'tool_error'), '') AS code,
  uniqExactState(call_id) AS calls
FROM calls
WHERE is_failure = 1 OR misflagged = 1
GROUP BY bucket, tenant, server, tool, category, is_failure, misflagged, code
