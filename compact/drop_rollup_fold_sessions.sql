-- Deletes the sessions_folded rows of superseded folds @folds of the hours
-- @hours, as drop_rollup_fold_rows.sql does for calls_5m_folded.
ALTER TABLE sessions_folded DELETE
WHERE toInt64(toUInt32(hour)) IN @hours AND fold IN @folds
