-- When each tool's definition in force changed, for ingest's catalog
-- (pipeline/tooldefs_catalog.go): per (tenant, server, tool) the sightings
-- ordered by time (then hash, so that ties order the same everywhere), and
-- of them the first one and every one whose hash differs from the sighting
-- before it, in that order (two versions sighted at the same instant: the
-- larger hash is in force after it, as queries/tool_changes.sql has it).
-- The version in force at a time t is the one of the last change at or
-- before t. The hashes are zipped with their predecessors, never read by
-- index inside a lambda: ClickHouse copies an array a lambda captures for
-- every element, which made this query quadratic in a tool's sightings
-- (ingest sights each tool hourly; a few months of them sent the former
-- query past the server's memory limit, and ingest with it at start;
-- schema TestToolCatalogLoadsALongHistory). A replayed sighting is a copy
-- of its original, the same time and hash, so the table is read without
-- FINAL.
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
    arrayMap(x -> x.2, s) AS hashes,
    arrayFilter((x, h, q, i) -> bitOr(i = 1, h != q), s, hashes,
      arrayPushFront(arrayPopBack(hashes), toUInt64(0)), arrayEnumerate(s)) AS points
  FROM tool_sightings
  GROUP BY tenant_, server_, tool_
)
ARRAY JOIN points AS p
ORDER BY tenant_, server_, tool_, change_ms, change_hash
