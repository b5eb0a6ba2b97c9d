-- The folds of calls_5m_folded added up per hour: per fold, tenant, server
-- and tool, the sums of the hour's twelve 5-minute rows (each count of a
-- bucket counts distinct calls, and a call id belongs to one bucket, so
-- they add up). compact.RollupHours writes an hour's rows here from its
-- calls_5m_folded rows under the same fold id, before it records the fold
-- in calls_5m_folds, so a reader that takes the hour's current fold
-- (calls_5m_current_folds) finds the same counts in both tables. Readers
-- whose buckets are whole hours (the spikes panel's range and its 7-day
-- baseline) read twelve times fewer rows here: a week's baseline of 1,820
-- tools is 306,000 rows instead of 3.7M (BENCHMARKS.md, eighteenth round).
CREATE TABLE IF NOT EXISTS calls_1h_folded (
  hour DateTime('UTC'),
  fold UInt64,
  tenant LowCardinality(String),
  server LowCardinality(String),
  tool LowCardinality(String),
  calls UInt64,
  invalid UInt64,
  ok UInt64,
  empty UInt64,
  identities UInt64,
  latest_invalid UInt64
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(hour)
ORDER BY (hour, tenant, server, tool)
