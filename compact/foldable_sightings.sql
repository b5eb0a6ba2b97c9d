-- The tool sightings before @cutoff_ms that fold_sightings.sql would delete
-- (the same set: see there) and every sighting before the cutoff:
-- compact.Sightings runs the mutation only when there is something to fold.
SELECT
  toUInt64(countIf(cityHash64(toString(tenant), toString(server), toString(tool), ts_ms, definition_hash) NOT IN (
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
    GROUP BY tenant, server, tool, toDate(ts)))) AS foldable,
  toUInt64(count()) AS before_cutoff
FROM tool_sightings
WHERE ts <= toDateTime(@cutoff_s, 'UTC') AND ts_ms < @cutoff_ms
