-- Deletes the records of superseded chain folds @folds of the hours @hours
-- (one mutation for a run's folds).
ALTER TABLE chain_folds DELETE
WHERE toInt64(toUInt32(hour)) IN @hours AND fold IN @folds
