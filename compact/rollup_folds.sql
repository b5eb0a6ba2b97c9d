-- The folds of calls_5m days in [@from_s, @to_s) already made: each day and
-- insert count that has one.
SELECT DISTINCT
  toUInt32(day) AS day_n,
  inserts
FROM calls_5m_folds
WHERE day >= toDate(toDateTime(@from_s, 'UTC')) AND day < toDate(toDateTime(@to_s, 'UTC'))
