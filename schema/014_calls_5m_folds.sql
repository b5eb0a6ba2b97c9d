-- One row per fold of a day of calls_5m into calls_5m_days, written after
-- the fold's rows: the day, the day's insert count in calls_day_inserts
-- before the fold read calls_5m (inserts), the fold id of its rows, and
-- when it was made. A fold interrupted before this row is never read.
CREATE TABLE IF NOT EXISTS calls_5m_folds (
  day Date,
  inserts UInt64,
  fold UInt64,
  folded DateTime('UTC')
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(day)
ORDER BY (day, fold)
