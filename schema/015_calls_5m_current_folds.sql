-- The folds that readers may use (schema/013_calls_5m_folded.sql): per
-- hour, the latest fold made at the insert count calls_hour_inserts has for
-- the hour now. An hour without one is read from calls_5m's states and the
-- raw calls; an hour that took an insert since its fold is too, until
-- compact.RollupHours folds it again. Two folds at the same count (two
-- processes folding at once) hold the same counts, and readers take the
-- latest. The readers (queries/invalid_argument_baseline_rollup.sql, the
-- spikes panel and the two spike rules) select calls_5m_folded rows whose
-- (hour, fold) is here and calls_5m or calls rows whose hour is not.
CREATE VIEW IF NOT EXISTS calls_5m_current_folds AS
SELECT hour, max(fold) AS fold
FROM calls_5m_folds
WHERE (hour, inserts) GLOBAL IN (
  SELECT hour, toUInt64(countMerge(rows))
  FROM calls_hour_inserts
  GROUP BY hour)
GROUP BY hour
