-- Complete UTC hours' calls that retry chains and re-calls can turn on,
-- folded with the hour (compact.RollupHours): per tenant, server, tool and
-- session key, each call of the hour once, as its latest ingest (the chain
-- panels' own step drops the other copies), continuations left out, when it
-- failed, when it came at most 60 s after a failed call of its group (a
-- retry, or the next call a re-call counts), or when it lies in the hour's
-- first 60 s (where the retries of the hour before's last failures lie).
-- The 60 s is the panels' retry window. A chain starts at a failed call
-- that is not a retry and ends at the first call that is not one, so the
-- chains, their outcomes, attempts and argument changes, and every failed
-- call's next call within 60 s, are the same over these rows as over all
-- the calls: a call left out is one that followed no failure within 60 s,
-- and it changes no call's predecessor that matters (docs/dashboards.md).
-- With 3 % of the calls failed that is about a tenth of the hour's rows;
-- the chain panels read every call of every session and tool with a
-- failure, 0.2-1.1 s for 24 hours of 10M calls on 18.16 (BENCHMARKS.md,
-- thirtieth round). Each fold also writes one row with ts_ms 0, the mark
-- that it has these rows (a real row's ts_ms lies in its hour): an hour
-- whose current fold was made before this table existed has none, readers
-- take its raw calls, and RollupHours folds it again. Readers take an
-- hour's rows from its current fold (calls_5m_current_folds) and bound
-- hour, first in the sort key. Kept as long as the raw calls.
CREATE TABLE IF NOT EXISTS chain_calls_folded (
  hour DateTime('UTC'),
  fold UInt64,
  tenant LowCardinality(String),
  server LowCardinality(String),
  tool LowCardinality(String),
  session_key String,
  ts_ms Int64,
  request_id String,
  call_id UInt64,
  ingested_ms Int64,
  is_failure UInt8,
  args_hash UInt64,
  category LowCardinality(String),
  declared_retryable Int8,
  expected_retryable Int8
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(hour)
ORDER BY (hour, fold, tenant, server, session_key, tool, ts_ms, call_id)
