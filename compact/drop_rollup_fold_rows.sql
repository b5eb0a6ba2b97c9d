-- Deletes the rows of the day's superseded folds @folds (a mutation), so
-- that a day folded again after late inserts keeps one fold's rows, not
-- one per late insert.
ALTER TABLE calls_5m_days DELETE
WHERE day = toDate(toDateTime(@day_s, 'UTC')) AND fold IN @folds
