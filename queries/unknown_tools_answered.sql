-- The refused names of unknown_tools.sql (@tools, or every name when
-- @all_tools = 1: too many to list) that the servers in @servers answered
-- on other calls of [@from, @to): per tenant, server and name, the calls
-- with no UNKNOWN_TOOL copy (their latest copy is something else) and the
-- last of them. A call with an UNKNOWN_TOOL copy is left out here:
-- unknown_tools.sql counts it, as answered (reclassified_n) when its latest
-- copy is not UNKNOWN_TOOL. Names are in the sort key, so the read is the
-- names' calls only.
SELECT
  CAST(tenant AS String) AS tenant_,
  CAST(server AS String) AS server_,
  CAST(tool AS String) AS tool_,
  toUInt64(uniqExact(call_id)) AS answered_n,
  max(ts_ms) AS last_ms
FROM calls
WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
  AND ts_ms >= @from_ms AND ts_ms < @to_ms
  AND (@tenant = '' OR tenant = @tenant)
  AND (@all_tenants = 1 OR has(@tenants, tenant))
  AND has(@servers, server)
  AND (@all_tools = 1 OR tool IN @tools)
  AND category != 'UNKNOWN_TOOL'
  AND call_id GLOBAL NOT IN (
    SELECT call_id
    FROM calls
    WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
      AND ts_ms >= @from_ms AND ts_ms < @to_ms
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND has(@servers, server)
      AND (@all_tools = 1 OR tool IN @tools)
      AND category = 'UNKNOWN_TOOL')
GROUP BY tenant_, server_, tool_
