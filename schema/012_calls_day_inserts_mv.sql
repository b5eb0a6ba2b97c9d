-- Feeds calls_day_inserts from every insert into calls, as calls_5m_mv feeds
-- calls_5m. last is the server's time of the insert: compact.RollupDays
-- folds a day only when its last insert is some minutes old, so that no
-- insert is halfway between this view and calls_5m_mv while it reads both.
CREATE MATERIALIZED VIEW IF NOT EXISTS calls_day_inserts_mv TO calls_day_inserts AS
SELECT
  toDate(ts) AS day,
  countState() AS rows,
  maxState(now()) AS last
FROM calls
GROUP BY day
