-- end_ms: the ts_ms of the chain's last call (its first success, or its
-- last failed retry), for /retry-loops' end and duration. Skipped when the
-- column exists (schema.Exec).
ALTER TABLE chains_folded ADD COLUMN end_ms Int64 DEFAULT 0
