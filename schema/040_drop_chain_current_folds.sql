-- chain_current_folds is defined again by the next migration, to take only
-- the folds that wrote their chains' sessions too
-- (schema/039_chain_folds_sessions.sql).
DROP TABLE IF EXISTS chain_current_folds
