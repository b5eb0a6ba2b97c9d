-- Records under fold @fold the violating calls of the UTC hour [@hour_s,
-- @hour_s + 3600) per second, tool and outcome, each as its latest ingest
-- (schema/023_violation_outcomes_folded.sql; the outcome is the
-- Schema-violating calls by outcome panel's), and the mark (outcome
-- empty). Run with the hour's other fold statements, before the fold is
-- recorded.
INSERT INTO violation_outcomes_folded (hour, fold, second, tenant, server, tool, outcome, calls)
SELECT toDateTime(@hour_s, 'UTC'), toUInt64(@fold), toDateTime(t, 'UTC'), tenant_, server_, tool_, outcome_, calls_n
FROM (
  SELECT
    t, tenant_, server_, tool_,
    multiIf(side_1 = 'result', 'result breaks outputSchema',
            invalid_1 = 1, 'arguments refused',
            failure_1 = 0, 'arguments accepted',
            'arguments, other failure') AS outcome_,
    toUInt64(uniqExact(call_id)) AS calls_n
  FROM (
    SELECT
      CAST(tenant AS String) AS tenant_,
      CAST(server AS String) AS server_,
      CAST(tool AS String) AS tool_,
      any(toUInt32(ts)) AS t,
      call_id,
      CAST(side AS String) AS side_1,
      argMax(toUInt8(category = 'INVALID_ARGUMENT'), ingested_ms) AS invalid_1,
      argMax(is_failure, ingested_ms) AS failure_1
    FROM call_violations
    WHERE ts >= toDateTime(@hour_s, 'UTC') AND ts < toDateTime(@hour_s + 3600, 'UTC')
      AND reason != ''
    GROUP BY tenant, server, tool, ts_ms, call_id, side, path, reason
  )
  GROUP BY t, tenant_, server_, tool_, outcome_
  UNION ALL
  SELECT toUInt32(@hour_s), '', '', '', '', toUInt64(0))
