-- Rollup of calls per 5-minute bucket for the dashboard panels that calls_5m
-- cannot answer (docs/dashboards.md): per tenant, server, tool, category,
-- failure flag, misflagged flag and failure code (the label of "Failures by
-- category and code": the JSON-RPC code of a protocol error, else the
-- server's error code, else no_response or tool_error; '' for calls that did
-- not fail), the distinct call ids. As in calls_5m, distinct call ids keep a
-- re-ingested call from counting twice, and a call re-ingested with another
-- classification (new rules) counts under both; a total over every class
-- counts it once in any case.
CREATE TABLE IF NOT EXISTS calls_5m_classes (
  bucket DateTime('UTC'),
  tenant LowCardinality(String),
  server LowCardinality(String),
  tool LowCardinality(String),
  category LowCardinality(String),
  is_failure UInt8,
  misflagged UInt8,
  code String,
  calls AggregateFunction(uniqExact, UInt64)
) ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMMDD(bucket)
ORDER BY (tenant, server, tool, bucket, category, is_failure, misflagged, code)
