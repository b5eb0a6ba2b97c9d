-- chain_current_folds is defined again by the next migration, to take only
-- the folds that wrote recalls_folded too (schema/032_chain_folds_recalls.sql).
DROP TABLE IF EXISTS chain_current_folds
