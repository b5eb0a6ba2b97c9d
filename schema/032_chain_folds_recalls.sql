-- recalls: 1 when the chain fold wrote the hour's failures to recalls_folded
-- too (schema/031_recalls_folded.sql). The folds made before have 0: they
-- are no longer current (schema/034_chain_current_folds.sql) and
-- compact.RollupChains makes them again, both tables at once; until then
-- the readers take those hours from the raw calls.
-- 18.16 has no ADD COLUMN IF NOT EXISTS, so schema.Exec (and Apply) skip
-- this statement when the column exists.
ALTER TABLE chain_folds ADD COLUMN recalls UInt8 DEFAULT 0
