-- The folds of the UTC hours @hours (their starts, unix seconds): each
-- hour, the insert count it was made at, and its fold id. RollupHours keeps
-- those of an hour it has just folded whose count is not that fold's
-- (superseded for good, since an hour's count only grows while the hour is
-- kept) or which are older at the same count (made before the folds listed
-- their hour's copies).
SELECT
  toInt64(toUInt32(hour)) AS hour_s,
  inserts,
  fold
FROM calls_5m_folds
WHERE toInt64(toUInt32(hour)) IN @hours
