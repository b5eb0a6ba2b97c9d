-- Complete UTC hours' retry chains, folded by compact.RollupChains: one row
-- per chain that starts in the hour (its first call's ts_ms in it), cut
-- as the chain panels cut them (docs/analytics.md, "Retry chains", with the
-- panels' 60 s window): per tenant, server, session key and tool,
-- continuations left out, each call once as its latest ingest, read from
-- 60 s before the hour (the call before a call decides whether it is a
-- retry) to ten windows after it. The row holds what the chain panels count
-- of a chain: its first call's category and declared and expected
-- retryability, its outcome (0 no retry, 1 retry then fail, 2 retry then
-- success), its calls and whether its retries changed the arguments. A
-- panel whose range holds the whole hour reads the chain from its end 600 s
-- after the hour or later, so it finds the chain the fold found, unless the
-- chain was still retrying at the fold's end: such a chain is open, and
-- its fold is recorded as open (chain_folds) and never read. Readers take
-- an hour's rows from its current fold (chain_current_folds), whose record
-- checks the insert counts of the hour and the hours on either side.
-- The chain panels read these for the complete hours of their range,
-- instead of every call of every session and tool with a failure
-- (BENCHMARKS.md, thirty-first round). Kept as long as the raw calls.
CREATE TABLE IF NOT EXISTS chains_folded (
  hour DateTime('UTC'),
  fold UInt64,
  tenant LowCardinality(String),
  server LowCardinality(String),
  tool LowCardinality(String),
  start_ms Int64,
  category LowCardinality(String),
  declared_retryable Int8,
  expected_retryable Int8,
  outcome UInt8,
  attempts UInt64,
  args_changed UInt8,
  open UInt8
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(hour)
ORDER BY (hour, fold, tenant, server, tool, start_ms)
