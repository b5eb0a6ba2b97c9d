-- The calls of a folded hour stored more than once (compact.RollupHours):
-- per fold of an hour, the call ids that have more than one row in the raw
-- calls at the fold's insert count, a re-ingested call's copies that no
-- merge had folded yet. Readers that count each call once, as its latest
-- ingest, set the replaced copies aside by finding the call ids that occur
-- more than once in their range: grouping a day's 1.44M call ids took most
-- of the overview's, the failure rates', the empty results' and the
-- misflagged calls' time (0.55 of 0.85-1.15 s on 18.16; BENCHMARKS.md,
-- twentieth round). For an hour whose current fold (calls_5m_current_folds)
-- has rows here they read its copied call ids instead, and group the raw
-- call ids of the other hours only. A copy shares its call's time, so a
-- call's copies lie in one hour. Every fold writes call id 0 as well, the
-- mark that it lists its hour's copies: an hour whose current fold was made
-- before this table existed has no rows here, and readers search its raw
-- calls until it is folded again. Kept as long as the raw calls.
CREATE TABLE IF NOT EXISTS calls_copies_folded (
  hour DateTime('UTC'),
  fold UInt64,
  call_id UInt64
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(hour)
ORDER BY (hour, fold, call_id)
