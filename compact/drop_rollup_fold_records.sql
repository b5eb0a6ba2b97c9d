-- Deletes the records of superseded folds @folds of the hours @hours (one
-- mutation for a run's folds; readers never took them, their insert count
-- being past).
ALTER TABLE calls_5m_folds DELETE
WHERE toInt64(toUInt32(hour)) IN @hours AND fold IN @folds
