-- The sightings of the definitions of definitions.sql, as ingest writes them
-- with its default -tool-sighting-every of 1 h: every tool's version in force
-- once an hour from the start of the span, the second version (a quarter of
-- the (server, tool)s, in every tenant) from half-way through it.
INSERT INTO tool_sightings (ts, ts_ms, tenant, server, tool, definition_hash, ingested_ms)
SELECT
  toDateTime(intDiv(t, 1000), 'UTC'), t, tenant, server, tool,
  if(cityHash64(toString(server), toString(tool)) % 4 = 0 AND t >= @start_ms + intDiv(@span_ms, 2),
    cityHash64(toString(server), toString(tool), 2), cityHash64(toString(server), toString(tool))),
  toInt64(1)
FROM (
  SELECT tenant, server, tool, toInt64(@start_ms + hour * 3600000) AS t
  FROM (SELECT DISTINCT tenant, server, tool FROM calls WHERE args_validated = 1)
  ARRAY JOIN range(toUInt64(greatest(intDiv(@span_ms, 3600000), 1))) AS hour
)
