-- Records a finished chain fold (schema/027_chain_folds.sql): from here on
-- readers take the hour's chains (with their sessions: sessions = 1) and
-- failures (recalls_folded) from it while the insert counts of the hour and
-- its neighbours add up to @inserts, unless it is @open.
INSERT INTO chain_folds (hour, inserts, fold, open, folded, recalls, sessions)
SELECT toDateTime(@hour_s, 'UTC'), toUInt64(@inserts), toUInt64(@fold), toUInt8(@open), now(), toUInt8(1), toUInt8(1)
