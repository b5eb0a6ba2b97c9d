-- The chain folds of the hours in [@from_s, @to_s) already made: each hour
-- and the sum of the insert counts of it and its two neighbours it was
-- made at (schema/027_chain_folds.sql). A fold made before it wrote the
-- hour's failures to recalls_folded too (schema/032), or its chains'
-- sessions (schema/039), is not one: the hour is folded again.
SELECT DISTINCT
  toInt64(toUInt32(hour)) AS hour_s,
  inserts
FROM chain_folds
WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC')
  AND recalls = 1 AND sessions = 1
