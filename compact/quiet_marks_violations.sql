-- The mark of violations_folded (fold_violations_hour.sql's, side empty)
-- of fold @fold for each hour of @hour_list: all that statement writes for
-- an hour without calls or violations. compact.RollupHours writes it for
-- its quiet hours instead of folding each, before it records their folds
-- (record_quiet_rollup_folds.sql); TestQuietRollupFoldsAreEmptyFolds
-- holds the two to the same rows.
INSERT INTO violations_folded (hour, fold, tenant, server, tool, side, path, reason, definition_hash, suggestion, detail, calls, invalid, accepted)
SELECT toDateTime(h, 'UTC'), toUInt64(@fold), '', '', '', '', '', '', toUInt64(0), '', '', toUInt64(0), toUInt64(0), toUInt64(0)
FROM (SELECT arrayJoin(@hour_list) AS h)
