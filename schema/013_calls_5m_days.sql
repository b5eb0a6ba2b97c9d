-- The calls_5m rollup of complete UTC days folded into plain counts
-- (compact.RollupDays): per tenant, server, tool and 5-minute bucket, the
-- distinct call ids (calls), those with an INVALID_ARGUMENT ingest
-- (invalid), those with an ingest that did not fail (ok) and those with an
-- EMPTY_RESULT ingest (empty), each exactly what uniqExactMerge(If) of the
-- bucket's calls_5m states answers; and from the raw calls of the bucket,
-- the distinct call identities (identities) and those whose latest ingest
-- is INVALID_ARGUMENT (latest_invalid), what the spikes panel counts in
-- its range. A call id belongs to one bucket (it
-- hashes the call's time), so the counts of several buckets add up, which
-- merging the states of seven days does not do cheaply (BENCHMARKS.md,
-- seventeenth round). Each fold of a day writes its rows under a new fold
-- id; readers take a day's rows from its latest fold in calls_5m_folds whose
-- insert count is the day's count in calls_day_inserts now, and read
-- calls_5m for every other day.
CREATE TABLE IF NOT EXISTS calls_5m_days (
  day Date,
  fold UInt64,
  tenant LowCardinality(String),
  server LowCardinality(String),
  tool LowCardinality(String),
  bucket DateTime('UTC'),
  calls UInt64,
  invalid UInt64,
  ok UInt64,
  empty UInt64,
  identities UInt64,
  latest_invalid UInt64
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(day)
ORDER BY (tenant, server, tool, bucket)
