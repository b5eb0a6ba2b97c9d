-- sessions: 1 when the chain fold wrote its chains' session_key, client,
-- end_ms and first_call_id too (schema/035 to 038). The folds made before
-- have 0: they are no longer current (schema/041_chain_current_folds.sql)
-- and compact.RollupChains makes them again; until then the readers take
-- those hours from the raw calls. Skipped when the column exists
-- (schema.Exec).
ALTER TABLE chain_folds ADD COLUMN sessions UInt8 DEFAULT 0
