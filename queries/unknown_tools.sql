-- Tool names the servers refused as unknown in [@from, @to): per tenant,
-- server and requested name, the calls whose latest copy (largest
-- ingested_ms, the row FINAL keeps) is UNKNOWN_TOOL, their sessions and
-- first and last time; the calls with an UNKNOWN_TOOL copy whose latest copy
-- is something else (reclassified_n, the last at reclassified_last_ms: the
-- name was answered after all); and the rows of all these calls that are
-- not UNKNOWN_TOOL (other_rows_n), which unknown_tools_known.sql's count of
-- the name's answered rows includes. Without FINAL: only a call with an
-- UNKNOWN_TOOL copy can count, so those calls are found first and grouped by
-- their identity (the sort key), as in invalid_argument_latest.sql. Every
-- refused name of the range, whatever the tool filter (UnknownTools applies
-- it: the others are set apart from the known tools too); @limit caps the
-- names, most refused first.
SELECT
  tenant_,
  server_,
  tool_,
  toUInt64(countIf(unknown_)) AS unknown_n,
  toUInt64(uniqExactIf(session_key, unknown_)) AS sessions_n,
  minIf(ts_ms, unknown_) AS first_ms,
  maxIf(ts_ms, unknown_) AS last_ms,
  toUInt64(countIf(NOT unknown_)) AS reclassified_n,
  maxIf(ts_ms, NOT unknown_) AS reclassified_last_ms,
  toUInt64(sum(other_)) AS other_rows_n
FROM (
  SELECT
    CAST(tenant AS String) AS tenant_,
    CAST(server AS String) AS server_,
    CAST(tool AS String) AS tool_,
    session_key,
    ts_ms,
    argMax(CAST(category AS String), ingested_ms) = 'UNKNOWN_TOOL' AS unknown_,
    countIf(category != 'UNKNOWN_TOOL') AS other_
  FROM calls
  WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
    AND ts_ms >= @from_ms AND ts_ms < @to_ms
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND call_id GLOBAL IN (
      SELECT call_id
      FROM calls
      WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
        AND ts_ms >= @from_ms AND ts_ms < @to_ms
        AND (@tenant = '' OR tenant = @tenant)
        AND (@all_tenants = 1 OR has(@tenants, tenant))
        AND (@server = '' OR server = @server)
            AND category = 'UNKNOWN_TOOL')
  GROUP BY tenant, server, tool, session_key, ts_ms, call_id
)
GROUP BY tenant_, server_, tool_
HAVING unknown_n > 0
ORDER BY unknown_n DESC, tenant_, server_, tool_
LIMIT @limit
