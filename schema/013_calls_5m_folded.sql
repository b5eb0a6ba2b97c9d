-- Complete UTC hours folded into plain counts (compact.RollupHours): per
-- tenant, server, tool and 5-minute bucket, from the calls_5m rollup the
-- distinct call ids (calls), those with an INVALID_ARGUMENT ingest
-- (invalid), those with an ingest that did not fail (ok) and those with an
-- EMPTY_RESULT ingest (empty), each exactly what uniqExactMerge(If) of the
-- bucket's calls_5m states answers; and from the raw calls of the bucket,
-- the distinct call identities (identities) and those whose latest ingest
-- is INVALID_ARGUMENT (latest_invalid), what the spikes panel counts in
-- its range. A call id belongs to one bucket (it hashes the call's time),
-- so the counts of several buckets add up, which merging the states of
-- seven days does not do cheaply (BENCHMARKS.md, seventeenth round). Each
-- fold of an hour writes its rows under a new fold id; readers take an
-- hour's rows from its current fold (calls_5m_current_folds) and read
-- calls_5m and the raw calls for every other hour. Readers bound hour as
-- well as bucket: the table keeps every fold for the rollup's retention,
-- and only a condition on hour, first in the sort key, skips the
-- partitions and granules outside the range (an hour's buckets read all
-- 2.25M rows of 8 days without it, 25,000 with it; BENCHMARKS.md,
-- seventeenth round).
CREATE TABLE IF NOT EXISTS calls_5m_folded (
  hour DateTime('UTC'),
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
PARTITION BY toYYYYMMDD(hour)
ORDER BY (hour, tenant, server, tool, bucket)
