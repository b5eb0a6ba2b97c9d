-- Records under fold @fold the session keys of the UTC hour [@hour_s,
-- @hour_s + 3600): per tenant, server, tool and session key, its rows
-- (schema/043_sessions_folded.sql), and the mark (calls 0). Copies of a
-- re-ingested call share its key, so the keys need no latest ingest. Run
-- with the hour's other fold statements, before the fold is recorded.
INSERT INTO sessions_folded (hour, fold, tenant, server, tool, session_key, calls)
SELECT toDateTime(@hour_s, 'UTC'), toUInt64(@fold), tenant_, server_, tool_, key_, n
FROM (
  SELECT
    CAST(tenant AS String) AS tenant_,
    CAST(server AS String) AS server_,
    CAST(tool AS String) AS tool_,
    session_key AS key_,
    toUInt64(count()) AS n
  FROM calls
  WHERE ts >= toDateTime(@hour_s, 'UTC') AND ts < toDateTime(@hour_s + 3600, 'UTC')
  GROUP BY tenant, server, tool, session_key
  UNION ALL
  SELECT '', '', '', '', toUInt64(0))
