-- Schema violations (docs/schemas.md): per tool, definition version, side
-- (arguments or result), path, reason and suggested value, the calls in
-- [from, to) whose arguments or structured result failed their tool's schema
-- there; of them, those the server refused as INVALID_ARGUMENT, and those it
-- answered without failing (it accepted bad input). Rows with an empty
-- reason only mark validated calls (schema_validated.sql counts them). The
-- detail is the same for every call of a row but for wrong_type (the type
-- sent varies): the smallest is shown.
-- A call ingested more than once counts once, as its latest ingest, as
-- call_violations FINAL would count it but without FINAL, which on 18.16
-- reads and merges every row of the range, the passing calls' included
-- (2.8-3.5 s for 24 h of 10M calls; BENCHMARKS.md, twelfth round): the inner
-- query groups the violation rows by the table's sorting key, the identity
-- FINAL folds, and takes the latest ingest's values of the other columns
-- (argMax by ingested_ms); only the rows with a reason are read past the
-- filter, a few per cent of the table. Relies on the daily partitions for
-- the time filter and on the (tenant, server, tool) prefix of the sort key
-- for the filters.
SELECT
  tool_name,
  hash_,
  side_,
  path_,
  reason_,
  suggestion_,
  detail_,
  calls_n,
  invalid_n,
  accepted_n
FROM (
  SELECT
    tool_name,
    hash_,
    side_,
    path_,
    reason_,
    suggestion_,
    min(detail_1) AS detail_,
    uniqExact(call_id) AS calls_n,
    uniqExactIf(call_id, invalid_1 = 1) AS invalid_n,
    uniqExactIf(call_id, failure_1 = 0) AS accepted_n
  FROM (
    SELECT
      toString(tool) AS tool_name,
      call_id,
      toString(side) AS side_,
      path AS path_,
      toString(reason) AS reason_,
      argMax(definition_hash, ingested_ms) AS hash_,
      argMax(suggestion, ingested_ms) AS suggestion_,
      argMax(detail, ingested_ms) AS detail_1,
      argMax(toUInt8(category = 'INVALID_ARGUMENT'), ingested_ms) AS invalid_1,
      argMax(is_failure, ingested_ms) AS failure_1
    FROM call_violations
    WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
      AND ts_ms >= @from_ms AND ts_ms < @to_ms
      AND reason != ''
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND (@server = '' OR server = @server)
      AND (@tool = '' OR tool = @tool)
    GROUP BY tenant, server, tool, ts_ms, call_id, side, path, reason
  )
  GROUP BY tool_name, hash_, side_, path_, reason_, suggestion_
)
WHERE calls_n >= @min_calls
ORDER BY calls_n DESC, tool_name, side_, path_, reason_, hash_, suggestion_
LIMIT @limit
