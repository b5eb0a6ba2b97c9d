-- The quiet hours of [@from_s, @to_s): those that no insert brought rows to
-- (no count in calls_hour_inserts) between the first and the last hour of
-- the span that one did, and that ended at least @settle_s seconds before
-- @now_s. compact.RollupHours folds them as empty hours once
-- quiet_hour_rows.sql finds no rows of them (rows attached without an
-- insert), so that readers take them as folded rather than stop their
-- folded hours there. The hours after the last insert wait for the next
-- one, so that an idle install folds nothing. Reads only
-- calls_hour_inserts, a row an hour.
SELECT toInt64(h) AS hour_s
FROM (
  SELECT toUInt32(@from_s + 3600 * i) AS h
  FROM (SELECT arrayJoin(range(toUInt32(intDiv(@to_s - @from_s, 3600)))) AS i))
WHERE h + 3600 + @settle_s <= @now_s
  AND h > (
    SELECT toUInt32(min(hour))
    FROM calls_hour_inserts
    WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC'))
  AND h < (
    SELECT toUInt32(max(hour))
    FROM calls_hour_inserts
    WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC'))
  AND h NOT IN (
    SELECT toUInt32(hour)
    FROM calls_hour_inserts
    WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC'))
ORDER BY h
