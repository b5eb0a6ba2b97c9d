-- Records under fold @fold the call ids of the UTC hour [@hour_s, @hour_s +
-- 3600) that have more than one row in the raw calls: the copies that
-- readers set aside (schema/017_calls_copies_folded.sql). Run with the
-- hour's other fold statements, before the fold is recorded.
INSERT INTO calls_copies_folded (hour, fold, call_id)
SELECT toDateTime(@hour_s, 'UTC'), toUInt64(@fold), call_id
FROM calls
WHERE ts >= toDateTime(@hour_s, 'UTC') AND ts < toDateTime(@hour_s + 3600, 'UTC')
GROUP BY call_id
HAVING count() > 1
