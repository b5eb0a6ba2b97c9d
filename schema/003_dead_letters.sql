-- Rejected input: one row per line or payload that could not be decoded,
-- with the reason given to the sender. Kept for inspection and replay.
CREATE TABLE IF NOT EXISTS dead_letters (
  received DateTime('UTC'),
  received_ms Int64,
  tenant LowCardinality(String),
  source LowCardinality(String),
  line UInt32,
  reason String,
  payload String
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(received)
ORDER BY (tenant, received_ms)
