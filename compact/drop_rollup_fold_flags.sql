-- Deletes the calls_flags_folded rows of superseded folds @folds of the
-- hours @hours, as drop_rollup_fold_rows.sql does for calls_5m_folded.
ALTER TABLE calls_flags_folded DELETE
WHERE toInt64(toUInt32(hour)) IN @hours AND fold IN @folds
