-- Records under fold @fold the call ids of the UTC hour [@hour_s, @hour_s +
-- 3600) that have more than one row in the raw calls: the copies that
-- readers set aside (schema/017_calls_copies_folded.sql). Run with the
-- hour's other fold statements, before the fold is recorded. It writes call
-- id 0 too, whatever the hour holds: the mark that says the fold lists its
-- hour's copies, which a fold made before this statement existed does not
-- (readers search such an hour's raw calls). As a copied id, 0 only asks
-- the readers to look at the calls with that id, which leaves their answers
-- as they are.
INSERT INTO calls_copies_folded (hour, fold, call_id)
SELECT toDateTime(@hour_s, 'UTC'), toUInt64(@fold), id
FROM (
  SELECT call_id AS id
  FROM calls
  WHERE ts >= toDateTime(@hour_s, 'UTC') AND ts < toDateTime(@hour_s + 3600, 'UTC')
  GROUP BY call_id
  HAVING count() > 1
  UNION ALL
  SELECT toUInt64(0))
