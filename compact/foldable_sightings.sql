-- The tool sightings before @cutoff_ms that fold_sightings.sql would delete
-- (all but the set of kept_sightings.sql, as there) and every sighting
-- before the cutoff: compact.Sightings runs the mutation only when there is
-- something to fold.
SELECT
  toUInt64(countIf(cityHash64(toString(tenant), toString(server), toString(tool), ts_ms, definition_hash) GLOBAL NOT IN (
    /* kept_sightings.sql */))) AS foldable,
  toUInt64(count()) AS before_cutoff
FROM tool_sightings
WHERE ts <= toDateTime(@cutoff_s, 'UTC') AND ts_ms < @cutoff_ms
