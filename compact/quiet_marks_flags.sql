-- The mark of calls_flags_folded (fold_flags_hour.sql's, calls 0 and
-- failures 1) of
-- fold @fold for each hour of @hour_list: all that statement writes for
-- an hour without calls or violations. compact.RollupHours writes it for
-- its quiet hours instead of folding each, before it records their folds
-- (record_quiet_rollup_folds.sql); TestQuietRollupFoldsAreEmptyFolds
-- holds the two to the same rows.
INSERT INTO calls_flags_folded (hour, fold, tenant, server, tool, category, calls, misflagged, failures)
SELECT toDateTime(h, 'UTC'), toUInt64(@fold), '', '', '', '', toUInt64(0), toUInt64(0), toUInt64(1)
FROM (SELECT arrayJoin(@hour_list) AS h)
