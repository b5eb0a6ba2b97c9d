-- Records under fold @fold the schema violations of the UTC hour [@hour_s,
-- @hour_s + 3600) as plain counts (schema/022_violations_folded.sql): the
-- violating calls per tool, side, path, reason, definition version and
-- suggested value, each as its latest ingest, with the smallest detail (the rows grouped by the table's sorting key first,
-- as the raw readers do), the validated calls per tool (the calls marked
-- args_validated, and from ingests before schema migration 024 the
-- violation rows of side arguments: queries/schema_validated.sql), and the
-- mark (side empty). Run with the hour's other fold statements, before the fold is
-- recorded.
INSERT INTO violations_folded (hour, fold, tenant, server, tool, side, path, reason, definition_hash, suggestion, detail, calls, invalid, accepted)
SELECT toDateTime(@hour_s, 'UTC'), toUInt64(@fold), tenant_, server_, tool_, side_, path_, reason_, hash_, suggestion_, detail_, calls_n, invalid_n, accepted_n
FROM (
  SELECT
    tenant_, server_, tool_, side_, path_, reason_, hash_, suggestion_,
    min(detail_1) AS detail_,
    toUInt64(uniqExact(call_id)) AS calls_n,
    toUInt64(uniqExactIf(call_id, invalid_1 = 1)) AS invalid_n,
    toUInt64(uniqExactIf(call_id, failure_1 = 0)) AS accepted_n
  FROM (
    SELECT
      CAST(tenant AS String) AS tenant_,
      CAST(server AS String) AS server_,
      CAST(tool AS String) AS tool_,
      call_id,
      CAST(side AS String) AS side_,
      path AS path_,
      CAST(reason AS String) AS reason_,
      argMax(definition_hash, ingested_ms) AS hash_,
      argMax(suggestion, ingested_ms) AS suggestion_,
      argMax(detail, ingested_ms) AS detail_1,
      argMax(toUInt8(category = 'INVALID_ARGUMENT'), ingested_ms) AS invalid_1,
      argMax(is_failure, ingested_ms) AS failure_1
    FROM call_violations
    WHERE ts >= toDateTime(@hour_s, 'UTC') AND ts < toDateTime(@hour_s + 3600, 'UTC')
      AND reason != ''
    GROUP BY tenant, server, tool, ts_ms, call_id, side, path, reason
  )
  GROUP BY tenant_, server_, tool_, side_, path_, reason_, hash_, suggestion_
  UNION ALL
  SELECT
    tenant_,
    server_,
    tool_,
    'arguments' AS side_,
    '' AS path_,
    '' AS reason_,
    toUInt64(0) AS hash_,
    '' AS suggestion_,
    '' AS detail_,
    toUInt64(uniqExact(call_id)) AS calls_n,
    toUInt64(0) AS invalid_n,
    toUInt64(0) AS accepted_n
  FROM (
    SELECT CAST(tenant AS String) AS tenant_, CAST(server AS String) AS server_, CAST(tool AS String) AS tool_, call_id
    FROM calls
    WHERE ts >= toDateTime(@hour_s, 'UTC') AND ts < toDateTime(@hour_s + 3600, 'UTC')
      AND args_validated = 1
    UNION ALL
    SELECT CAST(tenant AS String) AS tenant_, CAST(server AS String) AS server_, CAST(tool AS String) AS tool_, call_id
    FROM call_violations
    WHERE ts >= toDateTime(@hour_s, 'UTC') AND ts < toDateTime(@hour_s + 3600, 'UTC')
      AND side = 'arguments'
  )
  GROUP BY tenant_, server_, tool_
  UNION ALL
  SELECT '', '', '', '', '', '', toUInt64(0), '', '', toUInt64(0), toUInt64(0), toUInt64(0))
