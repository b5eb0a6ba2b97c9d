-- The definition of the schema-violations endpoint's rows, over
-- call_violations FINAL: the statement queries/schema_violations.sql replaced
-- (twelfth round, BENCHMARKS.md), kept for the differential test
-- (schema_diff_test.go), which runs it with schema_validated_final.sql as the
-- denominator and compares queries.SchemaViolations with it.
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
    toString(tool) AS tool_name,
    definition_hash AS hash_,
    toString(side) AS side_,
    path AS path_,
    toString(reason) AS reason_,
    suggestion AS suggestion_,
    min(detail) AS detail_,
    uniqExact(call_id) AS calls_n,
    uniqExactIf(call_id, category = 'INVALID_ARGUMENT') AS invalid_n,
    uniqExactIf(call_id, is_failure = 0) AS accepted_n
  FROM call_violations FINAL
  WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
    AND ts_ms >= @from_ms AND ts_ms < @to_ms
    AND reason != ''
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
  GROUP BY tool_name, hash_, side_, path_, reason_, suggestion_
)
WHERE calls_n >= @min_calls
ORDER BY calls_n DESC, tool_name, side_, path_, reason_, hash_, suggestion_
LIMIT @limit
