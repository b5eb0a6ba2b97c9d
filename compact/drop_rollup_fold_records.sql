-- Deletes the records of the day's superseded folds @folds (a mutation;
-- readers never took them, their insert count being past).
ALTER TABLE calls_5m_folds DELETE
WHERE day = toDate(toDateTime(@day_s, 'UTC')) AND fold IN @folds
