-- Annotation query: one marker per tool definition change in the range (a
-- sighting whose hash differs from the one before it; see
-- tool_definition_changes.sql), with the tool and server as text and tags,
-- for the INVALID_ARGUMENT and UNKNOWN_TOOL charts: a spike right after a
-- marker points at the change. A replayed sighting is a copy of its
-- original (time and hash): it sorts next to it and is no change, so the
-- table is read without FINAL.
SELECT
  toDateTime(intDiv(p.1, 1000)) AS time,
  concat('Definition of ', tool_name, ' changed (', server_name, ', ', tenant_name, ')') AS text,
  concat('tool:', tool_name, ',server:', server_name) AS tags
FROM (
  SELECT
    toString(tenant) AS tenant_name,
    toString(server) AS server_name,
    toString(tool) AS tool_name,
    arraySort(groupArray((ts_ms, definition_hash))) AS s,
    arrayMap(x -> x.2, s) AS hashes,
    arrayFilter((x, h, q, i) -> i > 1 AND h != q, s, hashes,
      arrayPushFront(arrayPopBack(hashes), toUInt64(0)), arrayEnumerate(s)) AS points
  FROM tool_sightings
  WHERE ts <= $__toTime
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY tenant_name, server_name, tool_name
)
ARRAY JOIN points AS p
WHERE p.1 >= toInt64(toUInt32($__fromTime)) * 1000
ORDER BY time
