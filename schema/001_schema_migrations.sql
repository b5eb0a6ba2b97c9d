-- Bookkeeping: one row per applied migration file.
CREATE TABLE IF NOT EXISTS schema_migrations (
  version UInt32,
  name String,
  applied_at DateTime('UTC')
) ENGINE = ReplacingMergeTree()
ORDER BY version
