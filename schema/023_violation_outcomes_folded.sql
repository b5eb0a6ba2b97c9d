-- Complete UTC hours of call_violations folded per second (compact.RollupHours,
-- with the hour's calls): per tenant, server, tool, second and outcome (the
-- Schema-violating calls by outcome panel's: 'result breaks outputSchema',
-- 'arguments refused', 'arguments accepted', 'arguments, other failure'),
-- the distinct violating calls, each as its latest ingest. A call has one
-- time and one tool, so the counts of several seconds and tools add up to
-- what the panel counts in the raw rows for any interval; only violating
-- calls make rows, a few per cent of call_violations. Each fold also writes
-- one row with outcome empty, the mark that it has these rows (as
-- violations_folded's). Kept as long as the raw calls.
CREATE TABLE IF NOT EXISTS violation_outcomes_folded (
  hour DateTime('UTC'),
  fold UInt64,
  second DateTime('UTC'),
  tenant LowCardinality(String),
  server LowCardinality(String),
  tool LowCardinality(String),
  outcome LowCardinality(String),
  calls UInt64
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(hour)
ORDER BY (hour, fold, second, tenant, server, tool, outcome)
