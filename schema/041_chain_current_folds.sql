-- The chain folds that readers may use (schema/026_chains_folded.sql,
-- schema/031_recalls_folded.sql): per hour, the latest fold without an open
-- chain that wrote the hour's failures (recalls) and its chains' sessions,
-- clients, ends and first calls (sessions) too, made at the sum of the
-- insert counts calls_hour_inserts has now for the hour before, the hour
-- and the hour after (0 when none of them has a count: a quiet hour's fold
-- is read too, so that one quiet hour does not send the panels to the raw
-- calls for the rest of their range). An hour without one is read from the
-- raw calls until compact.RollupChains folds it again: after an insert into
-- any of the three hours, or never while a chain is open at its fold's
-- end. Unlike schema/034's form it requires sessions = 1: a fold made
-- before schema/035-039 is made again.
CREATE VIEW IF NOT EXISTS chain_current_folds AS
SELECT hour, max(fold) AS fold
FROM (
  SELECT hour, inserts, fold
  FROM chain_folds
  WHERE open = 0 AND recalls = 1 AND sessions = 1) AS f
ANY LEFT JOIN (
  SELECT toDateTime(h, 'UTC') AS hour, toUInt64(sum(n)) AS counted
  FROM (
    SELECT arrayJoin([toUInt32(toUInt32(hour) - 3600), toUInt32(hour), toUInt32(toUInt32(hour) + 3600)]) AS h, n
    FROM (
      SELECT hour, countMerge(rows) AS n
      FROM calls_hour_inserts
      GROUP BY hour))
  GROUP BY h) AS c USING hour
WHERE inserts = counted
GROUP BY hour
