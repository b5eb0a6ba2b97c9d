-- The rows of the UTC day from @from_s (a toYYYYMMDD partition of calls) beyond
-- one per call identity (the table's sorting key): 0 once the day is
-- folded. Days runs it after each OPTIMIZE, which ClickHouse skips without
-- an error when a background merge holds some of the day's parts.
SELECT toUInt64(count() - uniqExact(tenant, server, tool, session_key, ts_ms, call_id)) AS copies
FROM calls
WHERE ts >= toDateTime(@from_s, 'UTC') AND ts < toDateTime(@from_s + 86400, 'UTC')
