-- One row per fold of an hour into calls_5m_folded, written after the
-- fold's rows: the hour, the hour's insert count in calls_hour_inserts
-- before the fold read calls_5m and calls (inserts), the fold id of its
-- rows, and when it was made. A fold interrupted before this row is never
-- read. Partitioned by month for the reason calls_hour_inserts is.
CREATE TABLE IF NOT EXISTS calls_5m_folds (
  hour DateTime('UTC'),
  inserts UInt64,
  fold UInt64,
  folded DateTime('UTC')
) ENGINE = MergeTree()
PARTITION BY toYYYYMM(hour)
ORDER BY (hour, fold)
