-- The tool names the servers in @servers are known to have, for the refused
-- names of unknown_tools.sql: per tenant, server and name, the rows of
-- [@from, @to) that are not UNKNOWN_TOOL (answered_rows_n), and the last
-- tools/list sighting before @to (listed_ms, 0 when none; the whole history,
-- so that a name listed long ago and refused now is known as removed). A name
-- with such a row was answered unless every such row is a copy of a call with
-- an UNKNOWN_TOOL copy too: unknown_tools.sql counts those rows
-- (other_rows_n) and which of those calls were answered in the end, and
-- UnknownTools compares. Counting rows, not calls, keeps this to one pass
-- over the servers' calls with no lookup of call ids: the first form looked
-- up the calls with an UNKNOWN_TOOL copy here, and the endpoint took 2.1 to
-- 2.6 times as long (BENCHMARKS.md, fifty-first round). tool_sightings is
-- read without FINAL: a replayed sighting changes no maximum.
SELECT
  tenant_,
  server_,
  tool_,
  sum(rows_) AS answered_rows_n,
  max(listed_) AS listed_ms
FROM (
  SELECT
    CAST(tenant AS String) AS tenant_,
    CAST(server AS String) AS server_,
    CAST(tool AS String) AS tool_,
    toUInt64(count()) AS rows_,
    toInt64(0) AS listed_
  FROM calls
  WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
    AND ts_ms >= @from_ms AND ts_ms < @to_ms
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND has(@servers, server)
    AND category != 'UNKNOWN_TOOL'
  GROUP BY tenant_, server_, tool_
  UNION ALL
  SELECT
    CAST(tenant AS String) AS tenant_,
    CAST(server AS String) AS server_,
    CAST(tool AS String) AS tool_,
    toUInt64(0) AS rows_,
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
