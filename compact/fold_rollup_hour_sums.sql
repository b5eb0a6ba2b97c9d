-- Adds up fold @fold of hour @hour_s from its calls_5m_folded rows into
-- one row per tenant, server and tool in calls_1h_folded, under the same
-- fold id (schema/016_calls_1h_folded.sql). Run after the hour's
-- calls_5m_folded rows are written and before the fold is recorded, so a
-- recorded fold has both.
INSERT INTO calls_1h_folded (hour, fold, tenant, server, tool, calls, invalid, ok, empty, identities, latest_invalid)
SELECT
  hour,
  fold,
  tenant,
  server,
  tool,
  sum(calls),
  sum(invalid),
  sum(ok),
  sum(empty),
  sum(identities),
  sum(latest_invalid)
FROM calls_5m_folded
WHERE hour = toDateTime(@hour_s, 'UTC') AND fold = @fold
GROUP BY hour, fold, tenant, server, tool
