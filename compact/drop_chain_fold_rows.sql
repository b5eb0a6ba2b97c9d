-- Deletes the rows of superseded chain folds @folds of the hours @hours
-- (one mutation for a run's folds), so that an hour folded again keeps one
-- fold's chains.
ALTER TABLE chains_folded DELETE
WHERE toInt64(toUInt32(hour)) IN @hours AND fold IN @folds
