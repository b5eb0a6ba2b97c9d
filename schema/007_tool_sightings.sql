-- When each tool definition version was seen: one row per sighting that an
-- ingest process wrote (pipeline/tooldefs_catalog.go): always when the
-- version in force changes at that time (a new hash, or a return to an older
-- one), otherwise at most once per -tool-sighting-every per version and
-- process, so that last_seen stays current without a row per session. First
-- and last seen are min and max of ts_ms per version; a change is a sighting
-- whose hash differs from the sighting before it (queries read the ordered
-- hashes per tool). Exact duplicates (a replayed capture) collapse under
-- FINAL. Monthly partitions: the table is small.
CREATE TABLE IF NOT EXISTS tool_sightings (
  ts DateTime('UTC'),
  ts_ms Int64,
  tenant LowCardinality(String),
  server LowCardinality(String),
  tool LowCardinality(String),
  definition_hash UInt64,
  ingested_ms Int64
) ENGINE = ReplacingMergeTree(ingested_ms)
PARTITION BY toYYYYMM(ts)
ORDER BY (tenant, server, tool, ts_ms, definition_hash)
