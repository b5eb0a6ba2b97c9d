-- The chain folds of the UTC hours @hours (their starts, unix seconds):
-- each hour, the insert count it was made at, and its fold id.
-- RollupChains drops those of an hour it has just folded that are not the
-- new fold and not newer than it.
SELECT
  toInt64(toUInt32(hour)) AS hour_s,
  inserts,
  fold
FROM chain_folds
WHERE toInt64(toUInt32(hour)) IN @hours
