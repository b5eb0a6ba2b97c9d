-- The folds of the UTC day @day_s made at an insert count other than
-- @inserts, its count now: superseded for good, since a day's count only
-- grows while the day is kept.
SELECT fold
FROM calls_5m_folds
WHERE day = toDate(toDateTime(@day_s, 'UTC')) AND inserts != @inserts
