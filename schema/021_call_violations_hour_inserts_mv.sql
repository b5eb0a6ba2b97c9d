-- Feeds calls_hour_inserts from every insert into call_violations as well,
-- as calls_hour_inserts_mv does from calls: the fold of an hour
-- (compact.RollupHours) holds the hour's schema violations too
-- (violations_folded, violation_outcomes_folded), and the violation rows
-- come in their own inserts, a flush interval after their calls or, after
-- an insert error, later still (pipeline.Tools). An hour's insert count,
-- and the time of its last insert, therefore move with either table, so a
-- fold is read only while neither took an insert into its hour since. Rows
-- inserted before this migration are not counted, which leaves the count
-- of every hour as its folds recorded it.
CREATE MATERIALIZED VIEW IF NOT EXISTS call_violations_hour_inserts_mv TO calls_hour_inserts AS
SELECT
  toDateTime(intDiv(toUInt32(ts), 3600) * 3600, 'UTC') AS hour,
  countState() AS rows,
  maxState(now()) AS last
FROM call_violations
GROUP BY hour
