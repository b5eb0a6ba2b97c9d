-- Schema violations (docs/schemas.md): per tool, definition version, side
-- (arguments or result), path, reason and suggested value, the calls in
-- [from, to) whose arguments or structured result failed their tool's schema
-- there; of them, those the server refused as INVALID_ARGUMENT, and those it
-- answered without failing (it accepted bad input). Rows with an empty
-- reason, which ingest wrote before schema migration 024, only mark
-- validated calls (schema_validated.sql counts them). The
-- detail is the same for every call of a row but for wrong_type (the type
-- sent varies): the smallest is shown.
-- A call ingested more than once counts once, as its latest ingest, as
-- call_violations FINAL would count it but without FINAL, which on 18.16
-- reads and merges every row of the range (2.8-3.5 s for 24 h of 10M calls
-- when every passing call had its row; BENCHMARKS.md, twelfth round): the inner
-- query groups the violation rows by the table's sorting key, the identity
-- FINAL folds, and takes the latest ingest's values of the other columns
-- (argMax by ingested_ms); only the rows with a reason are read past the
-- filter, a few per cent of the table. Relies on the daily partitions for
-- the time filter and on the (tenant, server, tool) prefix of the sort key
-- for the filters.
-- The hours that lie whole in [from, to) and that the retention job has
-- folded come from their counts in violations_folded (a current fold with
-- its mark, side empty: per version, path, reason and suggestion, each
-- call as its latest ingest, with the smallest detail), the other hours
-- from the raw rows; a call belongs to one hour, so the counts add up and
-- the smallest detail is the smallest of the hours' (BENCHMARKS.md,
-- twenty-seventh round).
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
    min(detail_2) AS detail_,
    sum(calls_2) AS calls_n,
    sum(invalid_2) AS invalid_n,
    sum(accepted_2) AS accepted_n
  FROM (
    SELECT
      tool_name,
      hash_,
      side_,
      path_,
      reason_,
      suggestion_,
      min(detail_1) AS detail_2,
      uniqExact(call_id) AS calls_2,
      uniqExactIf(call_id, invalid_1 = 1) AS invalid_2,
      uniqExactIf(call_id, failure_1 = 0) AS accepted_2
    FROM (
      SELECT
        CAST(tool AS String) AS tool_name,
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
      PREWHERE toStartOfHour(ts) GLOBAL NOT IN (
          SELECT hour
          FROM violations_folded
          WHERE side = ''
            AND hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
            AND toInt64(toUInt32(hour)) * 1000 >= @from_ms AND (toInt64(toUInt32(hour)) + 3600) * 1000 <= @to_ms
            AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
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
    UNION ALL
    SELECT
      CAST(tool AS String) AS tool_name,
      definition_hash AS hash_,
      CAST(side AS String) AS side_,
      path AS path_,
      CAST(reason AS String) AS reason_,
      suggestion AS suggestion_,
      min(detail) AS detail_2,
      sum(calls) AS calls_2,
      sum(invalid) AS invalid_2,
      sum(accepted) AS accepted_2
    FROM violations_folded
    PREWHERE (hour, fold) GLOBAL IN (
        SELECT hour, fold
        FROM violations_folded
        WHERE side = ''
          AND hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
          AND toInt64(toUInt32(hour)) * 1000 >= @from_ms AND (toInt64(toUInt32(hour)) + 3600) * 1000 <= @to_ms
          AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
    WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
      AND reason != ''
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND (@server = '' OR server = @server)
      AND (@tool = '' OR tool = @tool)
    GROUP BY tool_name, hash_, side_, path_, reason_, suggestion_
  )
  GROUP BY tool_name, hash_, side_, path_, reason_, suggestion_
)
WHERE calls_n >= @min_calls
ORDER BY calls_n DESC, tool_name, side_, path_, reason_, hash_, suggestion_
LIMIT @limit
