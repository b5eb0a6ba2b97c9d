-- The tool names the servers in @servers are known to have, for the refused
-- names of unknown_tools.sql: per tenant, server and name, the last call of
-- [@from, @to) whose latest copy is not UNKNOWN_TOOL (answered_ms, 0 when
-- none), and the last tools/list sighting before @to (listed_ms, 0 when
-- none; the whole history, so that a name listed long ago and refused now
-- is known as removed). Without FINAL: a call with no UNKNOWN_TOOL copy is
-- answered whatever its copies, and the calls with one (few) are grouped by
-- their identity for their latest copy, as in unknown_tools.sql.
-- tool_sightings is read without FINAL: a replayed sighting changes no
-- maximum.
SELECT
  tenant_,
  server_,
  tool_,
  max(answered_) AS answered_ms,
  max(listed_) AS listed_ms
FROM (
  SELECT
    CAST(tenant AS String) AS tenant_,
    CAST(server AS String) AS server_,
    CAST(tool AS String) AS tool_,
    max(ts_ms) AS answered_,
    toInt64(0) AS listed_
  FROM calls
  WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
    AND ts_ms >= @from_ms AND ts_ms < @to_ms
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND has(@servers, server)
    AND category != 'UNKNOWN_TOOL'
    AND call_id GLOBAL NOT IN (
      SELECT call_id
      FROM calls
      WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
        AND ts_ms >= @from_ms AND ts_ms < @to_ms
        AND (@tenant = '' OR tenant = @tenant)
        AND (@all_tenants = 1 OR has(@tenants, tenant))
        AND has(@servers, server)
        AND category = 'UNKNOWN_TOOL')
  GROUP BY tenant_, server_, tool_
  UNION ALL
  SELECT tenant_, server_, tool_, max(ts_ms) AS answered_, toInt64(0) AS listed_
  FROM (
    SELECT
      CAST(tenant AS String) AS tenant_,
      CAST(server AS String) AS server_,
      CAST(tool AS String) AS tool_,
      ts_ms,
      argMax(CAST(category AS String), ingested_ms) AS latest_
    FROM calls
    WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
      AND ts_ms >= @from_ms AND ts_ms < @to_ms
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND has(@servers, server)
      AND call_id GLOBAL IN (
        SELECT call_id
        FROM calls
        WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
          AND ts_ms >= @from_ms AND ts_ms < @to_ms
          AND (@tenant = '' OR tenant = @tenant)
          AND (@all_tenants = 1 OR has(@tenants, tenant))
          AND has(@servers, server)
          AND category = 'UNKNOWN_TOOL')
    GROUP BY tenant, server, tool, session_key, ts_ms, call_id
  )
  WHERE latest_ != 'UNKNOWN_TOOL'
  GROUP BY tenant_, server_, tool_
  UNION ALL
  SELECT
    CAST(tenant AS String) AS tenant_,
    CAST(server AS String) AS server_,
    CAST(tool AS String) AS tool_,
    toInt64(0) AS answered_,
    max(ts_ms) AS listed_
  FROM tool_sightings
  WHERE ts <= toDateTime(@to_s, 'UTC') AND ts_ms < @to_ms
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND has(@servers, server)
  GROUP BY tenant_, server_, tool_
)
GROUP BY tenant_, server_, tool_
ORDER BY tenant_, server_, tool_
