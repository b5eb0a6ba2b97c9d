-- The hours in [@from_hour_s, @to_hour_s) whose current fold holds
-- sessions_folded's mark (calls 0; schema/043_sessions_folded.sql), their
-- starts in Unix seconds, ascending: the hours that queries.Overview's
-- overview.sql reads from the folds. Such a fold was made since 043, so
-- it holds calls_flags_folded's rows with their failures (042) too: a fold
-- writes every table before it is recorded, and compact.RollupHours folds
-- again an hour whose fold lacks a table's mark. overview.sql reads the
-- raw calls before the range's first whole hour and from the first one
-- missing here on, so that the server skips the days in between. Reads
-- the folds' marks only, no tenant's rows.
SELECT DISTINCT toInt64(toUInt32(hour)) AS hour_s
FROM sessions_folded
WHERE calls = 0
  AND hour >= toDateTime(@from_hour_s, 'UTC') AND hour < toDateTime(@to_hour_s, 'UTC')
  AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds)
ORDER BY hour_s
