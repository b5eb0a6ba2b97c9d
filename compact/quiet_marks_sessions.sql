-- The mark of sessions_folded (fold_sessions_hour.sql's, calls 0) of fold
-- @fold for each hour of @hour_list: all that statement writes for an hour
-- without calls. compact.RollupHours writes it for its quiet hours instead
-- of folding each, before it records their folds
-- (record_quiet_rollup_folds.sql); TestQuietRollupFoldsAreEmptyFolds holds
-- the two to the same rows.
INSERT INTO sessions_folded (hour, fold, tenant, server, session_key, tools, calls)
SELECT toDateTime(h, 'UTC'), toUInt64(@fold), '', '', '', emptyArrayString(), toUInt64(0)
FROM (SELECT arrayJoin(@hour_list) AS h)
