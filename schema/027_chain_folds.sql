-- One row per fold of an hour's retry chains into chains_folded, written
-- after its rows: the hour, the insert counts in calls_hour_inserts of the
-- hour before, the hour and the hour after added up before the fold read
-- the calls (inserts: a chain starting in the hour reads the last minute of
-- the hour before and the first ten of the hour after; the counts only
-- grow, so their sum is unchanged exactly when each is), the fold id of its
-- rows, whether it found a chain still retrying at its end (open: the hour
-- is read from the raw calls), and when it was made. A fold interrupted
-- before this row is never read. Partitioned by month, as calls_5m_folds.
CREATE TABLE IF NOT EXISTS chain_folds (
  hour DateTime('UTC'),
  inserts UInt64,
  fold UInt64,
  open UInt8,
  folded DateTime('UTC')
) ENGINE = MergeTree()
PARTITION BY toYYYYMM(hour)
ORDER BY (hour, fold)
