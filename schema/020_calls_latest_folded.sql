-- The latest ingest of each call a folded hour stores more than once
-- (compact.RollupHours): per fold of an hour, for each call id with more
-- than one row in the raw calls at the fold's insert count, the largest
-- ingested_ms of its rows (latest_ms) and how many of its rows carry it
-- (copies: more than one when the same ingest was inserted twice). The
-- empty-results endpoint weighs every raw row of such a call by it, 1 /
-- copies for a row of the latest ingest and 0 for an older one, and so
-- counts each call once, as its latest ingest, in one pass over the range's
-- argument arrays; finding the latest ingests in the raw calls instead reads
-- every granule of the range, since the copies lie in all of them
-- (BENCHMARKS.md, twenty-sixth round). Every fold writes call id 0 as well,
-- the mark that it has these rows: an hour whose current fold was made
-- before this table existed has none, readers look its copies up in the raw
-- calls, and RollupHours folds it again. Kept as long as the raw calls.
CREATE TABLE IF NOT EXISTS calls_latest_folded (
  hour DateTime('UTC'),
  fold UInt64,
  call_id UInt64,
  latest_ms Int64,
  copies UInt64
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(hour)
ORDER BY (hour, fold, call_id)
