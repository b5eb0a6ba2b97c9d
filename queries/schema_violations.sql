-- Schema violations (docs/schemas.md): per tool, definition version, side
-- (arguments or result), path, reason and suggested value, the calls in
-- [from, to) whose arguments or structured result failed their tool's schema
-- there; of them, those the server refused as INVALID_ARGUMENT, and those it
-- answered without failing (it accepted bad input). Rows with an empty
-- reason only mark validated calls (schema_validated.sql counts them). The
-- detail is the same for every call of a row but for wrong_type (the type
-- sent varies): the smallest is shown. Reads call_violations FINAL, keyed by
-- call identity, and counts distinct call ids, so that a re-ingested call
-- counts once.
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
