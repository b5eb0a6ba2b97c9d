-- Deletes the failures of superseded chain folds @folds of the hours @hours
-- (one mutation for a run's folds), so that an hour folded again keeps one
-- fold's failures (schema/031_recalls_folded.sql).
ALTER TABLE recalls_folded DELETE
WHERE toInt64(toUInt32(hour)) IN @hours AND fold IN @folds
