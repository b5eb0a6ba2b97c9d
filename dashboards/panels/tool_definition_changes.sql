-- Tool definition changes in the range: per (tenant, server, tool) the
-- sightings of its definition ordered by time (then hash), and of them each
-- one whose hash differs from the sighting before it, that is a new version
-- or a return to an older one. A tool's first sighting is no change. The
-- whole history before the end of the range is read, since the sighting
-- before a change may be older than the range; without FINAL, since a
-- replayed sighting is a copy of its original (time and hash), which sorts
-- next to it and is no change. The arrays are zipped, never indexed inside a
-- lambda: a captured array is copied for every element mapped, which is
-- quadratic in a tool's sightings (queries/tool_changes.sql).
-- Hashes are shown as 16 hex digits, as the API shows them (hex drops
-- leading zero bytes; the zeros are put back); change_no counts the tool's
-- changes since its first sighting.
SELECT
  toDateTime(intDiv(p.1, 1000)) AS changed_at,
  tenant_name,
  server_name,
  tool_name,
  substring(concat('0000000000000000', lower(hex(p.3))), length(hex(p.3)) + 1) AS previous_hash,
  substring(concat('0000000000000000', lower(hex(p.2))), length(hex(p.2)) + 1) AS new_hash,
  p.4 AS change_no
FROM (
  SELECT
    toString(tenant) AS tenant_name,
    toString(server) AS server_name,
    toString(tool) AS tool_name,
    arraySort(groupArray((ts_ms, definition_hash))) AS s,
    arrayMap(x -> x.2, s) AS hashes,
    arrayPushFront(arrayPopBack(hashes), toUInt64(0)) AS previous,
    arrayFilter((c, h, q, i) -> i > 1 AND h != q,
      arrayMap((x, q) -> (x.1, x.2, q), s, previous), hashes, previous, arrayEnumerate(s)) AS changes,
    arrayMap((c, k) -> (c.1, c.2, c.3, toUInt32(k)), changes, arrayEnumerate(changes)) AS points
  FROM tool_sightings
  WHERE ts <= $__toTime
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  GROUP BY tenant_name, server_name, tool_name
)
ARRAY JOIN points AS p
WHERE p.1 >= toInt64(toUInt32($__fromTime)) * 1000
ORDER BY changed_at DESC, tenant_name, server_name, tool_name
