-- The folds of calls_5m days that readers may use (schema/013_calls_5m_days.sql):
-- per day, the latest fold made at the insert count calls_day_inserts has
-- for the day now. A day without one is read from calls_5m's states; a day
-- that took an insert since its fold is too, until compact.RollupDays folds
-- it again. Two folds at the same count (two processes folding at once)
-- hold the same counts, and readers take the latest. The readers of the
-- spikes' baselines (queries/invalid_argument_baseline_rollup.sql, the
-- spikes panel and the two spike rules) select calls_5m_days rows whose
-- (day, fold) is here and calls_5m rows whose day is not.
CREATE VIEW IF NOT EXISTS calls_5m_current_folds AS
SELECT day, max(fold) AS fold
FROM calls_5m_folds
WHERE (day, inserts) GLOBAL IN (
  SELECT day, toUInt64(countMerge(rows))
  FROM calls_day_inserts
  GROUP BY day)
GROUP BY day
