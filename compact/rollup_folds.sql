-- The folds of the hours in [@from_s, @to_s) already made: each hour and
-- insert count that has one.
SELECT DISTINCT
  toInt64(toUInt32(hour)) AS hour_s,
  inserts
FROM calls_5m_folds
WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC')
