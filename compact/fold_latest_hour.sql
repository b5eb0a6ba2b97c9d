-- Records under fold @fold, for each call id of the UTC hour [@hour_s,
-- @hour_s + 3600) with more than one row in the raw calls, its latest
-- ingest and how many rows carry it (schema/020_calls_latest_folded.sql),
-- and call id 0, the mark that the fold has these rows. Run with the hour's
-- other fold statements, before the fold is recorded.
INSERT INTO calls_latest_folded (hour, fold, call_id, latest_ms, copies)
SELECT toDateTime(@hour_s, 'UTC'), toUInt64(@fold), id, latest, n
FROM (
  SELECT
    call_id AS id,
    max(ingested_ms) AS latest,
    toUInt64(arrayCount(x -> x = latest, groupArray(ingested_ms))) AS n
  FROM calls
  WHERE ts >= toDateTime(@hour_s, 'UTC') AND ts < toDateTime(@hour_s + 3600, 'UTC')
  GROUP BY call_id
  HAVING count() > 1
  UNION ALL
  SELECT toUInt64(0), toInt64(0), toUInt64(0))
