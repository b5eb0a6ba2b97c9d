-- The UTC days of [@from_s, @to_s) that calls brought rows to, with how many
-- rows in all (the calls_5m day's fingerprint, schema/011_calls_day_inserts.sql)
-- and whether the last insert (by the server's clock) is at least
-- @settle_s seconds before @now_s (settled).
SELECT
  toUInt32(day) AS day_n,
  toUInt64(countMerge(rows)) AS inserts,
  toUInt8(maxMerge(last) <= toDateTime(@now_s - @settle_s, 'UTC')) AS settled
FROM calls_day_inserts
WHERE day >= toDate(toDateTime(@from_s, 'UTC')) AND day < toDate(toDateTime(@to_s, 'UTC'))
GROUP BY day
ORDER BY day
