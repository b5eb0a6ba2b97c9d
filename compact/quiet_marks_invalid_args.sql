-- The mark of invalid_args_folded (fold_invalid_args_hour.sql's, calls 0)
-- of fold @fold for each hour of @hour_list: all that statement writes for
-- an hour without calls or violations. compact.RollupHours writes it for
-- its quiet hours instead of folding each, before it records their folds
-- (record_quiet_rollup_folds.sql); TestQuietRollupFoldsAreEmptyFolds
-- holds the two to the same rows.
INSERT INTO invalid_args_folded (hour, fold, tenant, server, tool, session_key, arg_key, arg_value, calls)
SELECT toDateTime(h, 'UTC'), toUInt64(@fold), '', '', '', '', '', '', toUInt64(0)
FROM (SELECT arrayJoin(@hour_list) AS h)
