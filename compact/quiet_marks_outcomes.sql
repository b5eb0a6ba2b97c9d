-- The mark of violation_outcomes_folded (fold_violation_outcomes_hour.sql's,
-- outcome empty at the hour's first second) of fold @fold for each
-- hour of @hour_list: all that statement writes for an hour without
-- calls or violations. compact.RollupHours writes it for its quiet
-- hours instead of folding each, before it records their folds
-- (record_quiet_rollup_folds.sql); TestQuietRollupFoldsAreEmptyFolds
-- holds the two to the same rows.
INSERT INTO violation_outcomes_folded (hour, fold, second, tenant, server, tool, outcome, calls)
SELECT toDateTime(h, 'UTC'), toUInt64(@fold), toDateTime(h, 'UTC'), '', '', '', '', toUInt64(0)
FROM (SELECT arrayJoin(@hour_list) AS h)
