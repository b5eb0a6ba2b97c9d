-- Deletes the rows of superseded folds @folds of the hours @hours (one
-- mutation for a run's folds), so that an hour folded again after late
-- inserts keeps one fold's rows, not one per late insert.
ALTER TABLE calls_5m_folded DELETE
WHERE toInt64(toUInt32(hour)) IN @hours AND fold IN @folds
