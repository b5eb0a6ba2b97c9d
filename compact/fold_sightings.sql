-- Folds the tool sightings made before @cutoff_ms to the ends of their
-- unchanged runs within each day (compact.Sightings). Per (tenant, server,
-- tool) and UTC day, the sightings before the cutoff are ordered by time
-- then hash, as the queries order them (queries/tool_changes.sql); a run is
-- a stretch of one hash; its first and last sightings are kept, and so are
-- the day's first and last; every other one is deleted. Every change point
-- stays (the first sighting of a run), every version's first and last seen
-- up to any time past the cutoff, and the hash of the latest sighting
-- before any time (it falls in a run whose first sighting stays). Only the
-- last seen up to a time inside the folded past moves, to the latest kept
-- sighting before it: never more than a day earlier, as each day keeps its
-- first sighting. Copies of a kept sighting (a replay) share its key and
-- stay. The arrays are zipped with shifted copies, never indexed in a
-- lambda (see tool_changes.sql). The set is one SELECT, arrayJoin in the
-- grouping one: 18.16 runs a mutation whose subquery has a subquery of its
-- own without a query context, fails it ("There is no query") and retries
-- it for ever. A row is matched by the cityHash64 of its
-- key: a collision can only keep a row that could go, which changes no
-- answer. The mutation reads the table again for each part it rewrites;
-- deleting the middle of runs leaves the same run ends, so each read finds
-- the same set.
ALTER TABLE tool_sightings DELETE
WHERE ts <= toDateTime(@cutoff_s, 'UTC') AND ts_ms < @cutoff_ms
  AND cityHash64(toString(tenant), toString(server), toString(tool), ts_ms, definition_hash) NOT IN (
    /* kept_sightings.sql */)
