-- Records the empty folds of the quiet hours of @hour_list at insert count
-- 0, under one fold id @fold (schema/014_calls_5m_folds.sql), once their
-- marks are written (quiet_marks_*.sql): readers take them as any fold
-- while the hours' counts stay 0, as record_rollup_fold.sql's.
INSERT INTO calls_5m_folds (hour, inserts, fold, folded)
SELECT toDateTime(h, 'UTC'), toUInt64(0), toUInt64(@fold), now()
FROM (SELECT arrayJoin(@hour_list) AS h)
