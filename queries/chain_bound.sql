-- The Unix second up to which the chain queries read the retry chains of
-- [@from_ms, @to_ms) from their hourly fold (compact.RollupChains,
-- schema/026_chains_folded.sql): the start of the first hour without a
-- current chain fold (schema/028_chain_current_folds.sql) counting from
-- @from_hour_s, the hour the range starts in, or @to_hour_s, the start of
-- the hour the range ends in (the range's end when it falls on an hour),
-- when every hour before it has one. The queries read the chains that start
-- before it from the fold and compute those that start from it on from the
-- raw calls. The dashboards' chain_bound variable is the same lookup
-- (dashboards/variables/chain_bound.sql).
SELECT least(
  toInt64(@to_hour_s),
  toInt64(@from_hour_s) + 3600 * if(i = 0, toInt64(length(hs)), toInt64(i) - 1)) AS bound_s
FROM (
  SELECT
    arraySort(groupArray(toInt64(toUInt32(hour)))) AS hs,
    arrayFirstIndex((h, k) -> h != @from_hour_s + 3600 * (k - 1), hs, arrayEnumerate(hs)) AS i
  FROM chain_current_folds
  WHERE hour >= toDateTime(@from_hour_s, 'UTC') AND hour < toDateTime(@to_hour_s, 'UTC'))
