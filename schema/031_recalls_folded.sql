-- Complete UTC hours' failures with what came after each, folded by
-- compact.RollupChains with the hour's retry chains and under the same fold
-- id (schema/026_chains_folded.sql): one row per failed call of the hour
-- (its ts_ms in it), cut as the re-call panels cut them (docs/analytics.md,
-- "Unchanged re-calls", with the panels' 60 s window): per tenant, server,
-- session key and tool, continuations left out, each call once as its
-- latest ingest, read from the hour's start to 60 s after its end. The row
-- holds the failure's client (the least of its sequence's), category and
-- expected retryability, and whether its next call came within 60 s
-- (next), had the same args_hash too (same), whether it carried the
-- server's retry-after hint (hinted) and whether its next call came before
-- the hint had passed (early). A fold's validity is its chain fold's
-- (chain_folds, chain_current_folds: the insert counts of the hour and the
-- hours on either side), a superset of what the failures read. Retry habits
-- by client reads these for the complete hours of its range, instead of
-- every call of every session and tool with a failure (BENCHMARKS.md,
-- fifty-second round). Kept as long as the raw calls.
CREATE TABLE IF NOT EXISTS recalls_folded (
  hour DateTime('UTC'),
  fold UInt64,
  tenant LowCardinality(String),
  server LowCardinality(String),
  tool LowCardinality(String),
  client LowCardinality(String),
  ts_ms Int64,
  category LowCardinality(String),
  expected_retryable Int8,
  next UInt8,
  same UInt8,
  hinted UInt8,
  early UInt8
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(hour)
ORDER BY (hour, fold, tenant, server, tool, ts_ms)
