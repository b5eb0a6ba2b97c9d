-- The hours of @hours (quiet hours, between @first_s and @last_s:
-- compact.countQuietHours' and compact.RollupChains' hours that no insert
-- counted) that hold calls or schema violations all the same: rows attached
-- to the tables without an insert, which calls_hour_inserts never counted.
-- compact.RollupHours and compact.RollupChains do not take them as empty.
SELECT DISTINCT toInt64(toUInt32(toStartOfHour(ts))) AS hour_s
FROM calls
WHERE ts >= toDateTime(@first_s, 'UTC') AND ts < toDateTime(@last_s + 3600, 'UTC')
  AND toInt64(toUInt32(toStartOfHour(ts))) IN @hours
UNION ALL
SELECT DISTINCT toInt64(toUInt32(toStartOfHour(ts))) AS hour_s
FROM call_violations
WHERE ts >= toDateTime(@first_s, 'UTC') AND ts < toDateTime(@last_s + 3600, 'UTC')
  AND toInt64(toUInt32(toStartOfHour(ts))) IN @hours
