-- Records under fold @fold the session keys of the UTC hour [@hour_s,
-- @hour_s + 3600): per tenant, server and session key, the tools it called
-- (sorted, each once) and its rows (schema/043_sessions_folded.sql), and
-- the mark (calls 0). Copies of a re-ingested call share its key and tool,
-- so the keys need no latest ingest. Run with the hour's other fold
-- statements, before the fold is recorded.
INSERT INTO sessions_folded (hour, fold, tenant, server, session_key, tools, calls)
SELECT toDateTime(@hour_s, 'UTC'), toUInt64(@fold), tenant_, server_, key_, tools_, n
FROM (
  SELECT
    CAST(tenant AS String) AS tenant_,
    CAST(server AS String) AS server_,
    session_key AS key_,
    arraySort(groupUniqArray(CAST(tool AS String))) AS tools_,
    toUInt64(count()) AS n
  FROM calls
  WHERE ts >= toDateTime(@hour_s, 'UTC') AND ts < toDateTime(@hour_s + 3600, 'UTC')
  GROUP BY tenant, server, session_key
  UNION ALL
  SELECT '', '', '', emptyArrayString(), toUInt64(0))
