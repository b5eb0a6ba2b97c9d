-- Feeds calls_hour_inserts from every insert into calls, as calls_5m_mv
-- feeds calls_5m. last is the server's time of the insert:
-- compact.RollupHours folds an hour only when its last insert is some
-- minutes old, so that no insert is halfway between this view and
-- calls_5m_mv while it reads both.
CREATE MATERIALIZED VIEW IF NOT EXISTS calls_hour_inserts_mv TO calls_hour_inserts AS
SELECT
  toDateTime(intDiv(toUInt32(ts), 3600) * 3600, 'UTC') AS hour,
  countState() AS rows,
  maxState(now()) AS last
FROM calls
GROUP BY hour
