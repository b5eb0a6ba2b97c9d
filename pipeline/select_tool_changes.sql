-- When each tool's definition in force changed, for ingest's catalog
-- (pipeline/tooldefs_catalog.go): per (tenant, server, tool) the sightings
-- ordered by time (then hash, so that ties order the same everywhere), and
-- of them the first one and every one whose hash differs from the sighting
-- before it. The version in force at a time t is the one of the last change
-- at or before t. s[0] (for i = 1) is the default tuple, never read.
SELECT
  tenant_,
  server_,
  tool_,
  p.1 AS change_ms,
  p.2 AS change_hash
FROM (
  SELECT
    toString(tenant) AS tenant_,
    toString(server) AS server_,
    toString(tool) AS tool_,
    arraySort(groupArray((ts_ms, definition_hash))) AS s,
    arrayFilter((x, i) -> i = 1 OR x.2 != s[i - 1].2, s, arrayEnumerate(s)) AS points
  FROM tool_sightings FINAL
  GROUP BY tenant_, server_, tool_
)
ARRAY JOIN points AS p
