-- When each tool's definition in force changed, before @to, for the tools
-- in @tools unless @all_tools = 1 (the spikes read their candidates' only):
-- per (tenant, server, tool) the sightings ordered by time (then hash, so
-- that ties order alike on every engine); a point is the first sighting (is_first = 1: the
-- tool's first known definition, not a change) or a sighting whose hash
-- differs from the one before it, which includes a return to an older
-- version. The version in force at t is the one of the last point at or
-- before t. previous is the hash of the sighting before each one (0 before
-- the first, only read as the previous hash of the first point): the arrays
-- are zipped, never indexed inside a lambda, because ClickHouse copies an
-- array a lambda captures for every element it maps, which made this query
-- quadratic in a tool's sightings (on 18.16 it asked for 32 GiB over two
-- months of hourly sightings of 1,820 tools; BENCHMARKS.md, twelfth round). A replayed sighting is a copy of its original,
-- the same time and hash: it sorts next to it and is no change, so the table
-- is read without FINAL. The rows come in the arrays' order, hash after
-- time: two versions sighted at the same instant (two ingest processes)
-- change the definition twice, and the larger hash is in force after both;
-- ordered by time alone, the two came back in any order, and the version in
-- force taken from the last of them (queries.ToolVersions) with them.
SELECT
  tenant_,
  server_,
  tool_,
  p.1 AS change_ms,
  p.2 AS change_hash,
  p.3 AS previous_hash,
  p.4 AS is_first
FROM (
  SELECT
    toString(tenant) AS tenant_,
    toString(server) AS server_,
    toString(tool) AS tool_,
    arraySort(groupArray((ts_ms, definition_hash))) AS s,
    arrayMap(x -> x.2, s) AS hashes,
    arrayPushFront(arrayPopBack(hashes), toUInt64(0)) AS previous,
    arrayFilter((p, h, q, i) -> i = 1 OR h != q,
      arrayMap((x, q, i) -> (x.1, x.2, q, toUInt8(i = 1)), s, previous, arrayEnumerate(s)),
      hashes, previous, arrayEnumerate(s)) AS points
  FROM tool_sightings
  WHERE ts <= toDateTime(@to_s, 'UTC') AND ts_ms < @to_ms
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
    AND (@all_tools = 1 OR tool IN @tools)
  GROUP BY tenant_, server_, tool_
)
ARRAY JOIN points AS p
ORDER BY tenant_, server_, tool_, change_ms, change_hash
