-- Rollup of calls per 5-minute bucket for the failure-rate panels. Counts are
-- uniqExact states of call_id, so a call ingested twice counts once here too
-- (a plain count in a SummingMergeTree would count the replay). A call that is
-- re-ingested with a different category (new rules) counts under both.
CREATE TABLE IF NOT EXISTS calls_5m (
  bucket DateTime('UTC'),
  tenant LowCardinality(String),
  server LowCardinality(String),
  tool LowCardinality(String),
  category LowCardinality(String),
  rpc_code Int64,
  is_failure UInt8,
  calls AggregateFunction(uniqExact, UInt64)
) ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMMDD(bucket)
ORDER BY (tenant, server, tool, bucket, category, rpc_code, is_failure)
