-- Records a finished fold (schema/014_calls_5m_folds.sql): from here on
-- readers take the hour from it while the hour's insert count is @inserts.
INSERT INTO calls_5m_folds (hour, inserts, fold, folded)
SELECT toDateTime(@hour_s, 'UTC'), toUInt64(@inserts), toUInt64(@fold), now()
