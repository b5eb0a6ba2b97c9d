-- Records a finished fold (schema/014_calls_5m_folds.sql): from here on
-- readers take the day from it while the day's insert count is @inserts.
INSERT INTO calls_5m_folds (day, inserts, fold, folded)
SELECT toDate(toDateTime(@day_s, 'UTC')), toUInt64(@inserts), toUInt64(@fold), now()
