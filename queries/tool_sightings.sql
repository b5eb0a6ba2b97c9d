-- Tool definition versions: per (tenant, server, tool, definition hash), when
-- the version was first and last seen (tool_sightings, written by ingest at
-- each change and at most once per -tool-sighting-every otherwise, so
-- last_seen is as fresh as that interval). Reads the whole history before
-- @to: a version's first sighting may be long before the range. A replayed
-- sighting is a copy of its original, the same time and hash, so it changes
-- neither the first nor the last time, and the table is read without FINAL,
-- whose merge of the whole history took 18.16 most of this query's time.
SELECT
  toString(tenant) AS tenant_,
  toString(server) AS server_,
  toString(tool) AS tool_,
  definition_hash AS hash_,
  min(ts_ms) AS first_ms,
  max(ts_ms) AS last_ms
FROM tool_sightings
WHERE ts <= toDateTime(@to_s, 'UTC') AND ts_ms < @to_ms
  AND (@tenant = '' OR tenant = @tenant)
  AND (@all_tenants = 1 OR has(@tenants, tenant))
  AND (@server = '' OR server = @server)
  AND (@tool = '' OR tool = @tool)
GROUP BY tenant_, server_, tool_, hash_
ORDER BY tenant_, server_, tool_, first_ms, hash_
