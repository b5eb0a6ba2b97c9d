-- Records under fold @fold the INVALID_ARGUMENT calls of the UTC hour
-- [@hour_s, @hour_s + 3600) per tenant, server, tool, session key and
-- argument key=value pair (schema/025_invalid_args_folded.sql): each call
-- once, as its latest ingest (its rows grouped by the table's sorting key,
-- as the panel does), counted when that ingest is INVALID_ARGUMENT, with
-- that ingest's arguments; and the mark (calls 0). Only the calls with an
-- INVALID_ARGUMENT copy can count, so they are found first (GLOBAL IN,
-- which a cluster needs for a subquery over calls; one server's 26.7 takes
-- about 14 ms longer an hour for it than for a plain IN, BENCHMARKS.md,
-- thirty-fifth round). Run with the hour's other fold statements, before
-- the fold is recorded.
INSERT INTO invalid_args_folded (hour, fold, tenant, server, tool, session_key, arg_key, arg_value, calls)
SELECT toDateTime(@hour_s, 'UTC'), toUInt64(@fold), tenant_, server_, tool_, session_, k, v, n
FROM (
  SELECT tenant_, server_, tool_, session_, k, v, toUInt64(count()) AS n
  FROM (
    SELECT tenant_, server_, tool_, session_, l.2 AS keys_, l.3 AS values_
    FROM (
      SELECT
        CAST(tenant AS String) AS tenant_,
        CAST(server AS String) AS server_,
        CAST(tool AS String) AS tool_,
        session_key AS session_,
        argMax((CAST(category AS String), arg_keys, arg_values), ingested_ms) AS l
      FROM calls
      WHERE ts >= toDateTime(@hour_s, 'UTC') AND ts < toDateTime(@hour_s + 3600, 'UTC')
        AND call_id GLOBAL IN (
          SELECT call_id
          FROM calls
          WHERE ts >= toDateTime(@hour_s, 'UTC') AND ts < toDateTime(@hour_s + 3600, 'UTC')
            AND category = 'INVALID_ARGUMENT')
      GROUP BY tenant, server, tool, session_key, ts_ms, call_id
    )
    WHERE l.1 = 'INVALID_ARGUMENT'
  )
  ARRAY JOIN keys_ AS k, values_ AS v
  GROUP BY tenant_, server_, tool_, session_, k, v
  UNION ALL
  SELECT '', '', '', '', '', '', toUInt64(0))
