-- The tool sightings before @cutoff_ms that a fold keeps, as the
-- cityHash64 of their key (tenant, server, tool, ts_ms, definition_hash):
-- per (tenant, server, tool) and UTC day, the first and last sighting of
-- each run of one hash and the day's first and last (fold_sightings.sql
-- says why). compact.Sightings puts this set into fold_sightings.sql (the
-- deletion) and foldable_sightings.sql (the count before it) where each
-- says /* kept_sightings.sql */, so that the two cannot disagree.
SELECT arrayJoin(arrayMap(x -> cityHash64(toString(tenant), toString(server), toString(tool), x.1, x.2),
  arrayFilter((x, hc, hp, hn, i, j) -> bitOr(bitOr(i = 1, j = 1), bitOr(hc != hp, hc != hn)),
    arraySort(groupArray((ts_ms, definition_hash))) AS s,
    arrayMap(x -> x.2, s) AS h,
    arrayPushFront(arrayPopBack(h), toUInt64(0)),
    arrayPushBack(arrayPopFront(h), toUInt64(0)),
    arrayEnumerate(s),
    arrayReverse(arrayEnumerate(s)))))
FROM tool_sightings
WHERE ts <= toDateTime(@cutoff_s, 'UTC') AND ts_ms < @cutoff_ms
GROUP BY tenant, server, tool, toDate(ts)
