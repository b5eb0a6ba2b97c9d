-- How many rows each insert into calls brought to each UTC day, and when the
-- last one came: the fingerprint of a day of the calls_5m rollup. Every
-- insert into calls adds to its day's count here as it adds to calls_5m
-- (calls_day_inserts_mv), and neither a merge nor a repeated call ever lowers
-- it, so a day whose count is unchanged has the calls_5m it had. The fold of
-- complete days into plain counts (calls_5m_days, compact.RollupDays) is
-- read only while its day's count is the one it was made at.
CREATE TABLE IF NOT EXISTS calls_day_inserts (
  day Date,
  rows AggregateFunction(count),
  last AggregateFunction(max, DateTime)
) ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMMDD(day)
ORDER BY day
