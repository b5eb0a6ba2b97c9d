-- Records the empty chain folds (schema/027_chain_folds.sql) of the quiet
-- hours of @hour_list, each at the insert count of its neighbourhood in
-- @insert_list, under one fold id @fold: hours that no insert counted and
-- that hold no call start no chain, so compact.RollupChains records their
-- folds without reading the calls around them. Readers take them as any
-- fold while the counts stay.
INSERT INTO chain_folds (hour, inserts, fold, open, folded, recalls, sessions)
SELECT toDateTime(hn.1, 'UTC'), toUInt64(hn.2), toUInt64(@fold), toUInt8(0), now(), toUInt8(1), toUInt8(1)
FROM (SELECT arrayJoin(arrayMap((h, n) -> (h, n), @hour_list, @insert_list)) AS hn)
