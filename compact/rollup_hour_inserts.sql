-- The UTC hours of [@from_s, @to_s) that calls brought rows to, with how
-- many rows in all (the hour's fingerprint,
-- schema/011_calls_hour_inserts.sql) and whether the last insert (by the
-- server's clock) is at least @settle_s seconds before @now_s (settled).
SELECT
  toInt64(toUInt32(hour)) AS hour_s,
  toUInt64(countMerge(rows)) AS inserts,
  toUInt8(maxMerge(last) <= toDateTime(@now_s - @settle_s, 'UTC')) AS settled
FROM calls_hour_inserts
WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC')
GROUP BY hour
ORDER BY hour
