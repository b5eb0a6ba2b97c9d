-- The hours in [@from_hour_s, @to_hour_s) whose current fold holds
-- calls_flags_folded's mark of a fold that counts failures (calls 0,
-- failures 1; schema/030_calls_flags_folded.sql, 042), their starts in
-- Unix seconds, ascending. queries.Misclassifications' misflagged.sql
-- reads the raw calls before the range's first whole hour and from the
-- first one missing here on, so that the server skips the days in between
-- (queries.Overview's overview_fold_hours.sql likewise). Reads the folds'
-- marks only, no tenant's rows.
SELECT DISTINCT toInt64(toUInt32(hour)) AS hour_s
FROM calls_flags_folded
WHERE calls = 0 AND failures = 1
  AND hour >= toDateTime(@from_hour_s, 'UTC') AND hour < toDateTime(@to_hour_s, 'UTC')
  AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds)
ORDER BY hour_s
