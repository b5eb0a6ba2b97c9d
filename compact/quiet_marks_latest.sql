-- The mark of calls_latest_folded (fold_latest_hour.sql's, call id 0) of
-- fold @fold for each hour of @hour_list: all that statement writes for
-- an hour without calls or violations. compact.RollupHours writes it for
-- its quiet hours instead of folding each, before it records their folds
-- (record_quiet_rollup_folds.sql); TestQuietRollupFoldsAreEmptyFolds
-- holds the two to the same rows.
INSERT INTO calls_latest_folded (hour, fold, call_id, latest_ms, copies)
SELECT toDateTime(h, 'UTC'), toUInt64(@fold), toUInt64(0), toInt64(0), toUInt64(0)
FROM (SELECT arrayJoin(@hour_list) AS h)
