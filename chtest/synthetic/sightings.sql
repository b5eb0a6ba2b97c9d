-- The sighting of each definition of definitions.sql, at the start of the
-- span: the version in force for every range of the benchmarks.
INSERT INTO tool_sightings (ts, ts_ms, tenant, server, tool, definition_hash, ingested_ms)
SELECT
  toDateTime(intDiv(@start_ms, 1000), 'UTC'), toInt64(@start_ms), tenant, server, tool,
  cityHash64(tenant, server, tool), toInt64(1)
FROM (SELECT DISTINCT tenant, server, tool FROM calls)
