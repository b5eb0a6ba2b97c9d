-- Gives each hour of @hour_list (quiet hours without rows,
-- compact.countQuietHours) an insert count of 0 in calls_hour_inserts, whose
-- last insert is the hour's start: compact.RollupHours then folds it like
-- any other hour, at count 0, and a late insert into it makes that fold
-- stale as any other. Only counts of 0 are added: a count the hour has
-- since taken adds to it.
INSERT INTO calls_hour_inserts (hour, rows, last)
SELECT toDateTime(h, 'UTC') AS hour, countStateIf(toUInt8(0)) AS rows, maxState(toDateTime(h)) AS last
FROM (SELECT arrayJoin(@hour_list) AS h)
GROUP BY h
