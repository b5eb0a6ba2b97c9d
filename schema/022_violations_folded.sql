-- Complete UTC hours of call_violations folded into plain counts
-- (compact.RollupHours, with the hour's calls): per tenant, server, tool,
-- side, path, reason, definition version and suggested value, the distinct
-- calls whose latest ingest has that violation (calls), of them those whose
-- latest ingest is INVALID_ARGUMENT (invalid) and those whose latest ingest
-- did not fail (accepted), and the smallest detail, exactly what
-- GET /api/v1/schema-violations and the Schema violations by path panel
-- count in the raw rows; and per tenant, server and tool one row with side
-- 'arguments', definition_hash 0 and path, reason, suggestion and detail
-- empty, whose calls are the
-- hour's validated calls (distinct call ids marked args_validated in calls
-- or with a row of side arguments: queries/schema_validated.sql). A call
-- belongs to one hour (its copies share its time), so the counts of several
-- hours add up, where the raw panel counts the distinct call ids of every
-- validated call of the range: 0.4-0.7 s for 24 hours of 10M calls on
-- 18.16 (BENCHMARKS.md, twenty-seventh round). Each fold also writes one
-- row with side empty, the mark that it has these rows: an hour whose
-- current fold was made before this table existed has none, readers take
-- its raw rows, and RollupHours folds it again. Readers take an hour's rows
-- from its current fold (calls_5m_current_folds) and bound hour, first in
-- the sort key. Kept as long as the raw calls.
CREATE TABLE IF NOT EXISTS violations_folded (
  hour DateTime('UTC'),
  fold UInt64,
  tenant LowCardinality(String),
  server LowCardinality(String),
  tool LowCardinality(String),
  side LowCardinality(String),
  path String,
  reason LowCardinality(String),
  definition_hash UInt64,
  suggestion String,
  detail String,
  calls UInt64,
  invalid UInt64,
  accepted UInt64
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(hour)
ORDER BY (hour, fold, tenant, server, tool, side, path, reason, definition_hash, suggestion)
