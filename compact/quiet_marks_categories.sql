-- The mark of calls_categories_folded (fold_categories_hour.sql's, calls 0)
-- of fold @fold for each hour of @hour_list: all that statement writes for
-- an hour without calls or violations. compact.RollupHours writes it for
-- its quiet hours instead of folding each, before it records their folds
-- (record_quiet_rollup_folds.sql); TestQuietRollupFoldsAreEmptyFolds
-- holds the two to the same rows.
INSERT INTO calls_categories_folded (hour, fold, tenant, server, tool, category, calls)
SELECT toDateTime(h, 'UTC'), toUInt64(@fold), '', '', '', '', toUInt64(0)
FROM (SELECT arrayJoin(@hour_list) AS h)
