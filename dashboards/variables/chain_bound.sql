-- chain_bound, a hidden variable of every dashboard with a retry-chain panel
-- (build.go, boundVariable): the Unix second up to which those panels read
-- chains from their hourly fold (compact.RollupChains,
-- schema/026_chains_folded.sql), as one value. It is the start of the range's
-- first hour without a current chain fold (schema/034_chain_current_folds.sql)
-- counting from the hour the range starts in, or the end of the hour the
-- range ends in when every hour has one. The panels read the chains that
-- start before it from the fold and compute the ones that start from it on
-- from the raw calls.
-- Grafana runs this once per refresh and time range change, before the
-- panels that use it; written into each chain panel, the subquery cost
-- ClickHouse 18.16 about 70 ms a panel, which analyses it again at every
-- nesting level above it (BENCHMARKS.md, thirty-third round).
SELECT toString(least(
  intDiv(toUInt32($__toTime) + 1, 3600) * 3600,
  intDiv(toUInt32($__fromTime), 3600) * 3600 + 3600 * if(i = 0, length(hs), toUInt64(i - 1)))) AS chain_bound
FROM (
  SELECT
    arraySort(groupArray(toUInt32(hour))) AS hs,
    arrayFirstIndex((h, k) -> h != intDiv(toUInt32($__fromTime), 3600) * 3600 + 3600 * (k - 1), hs, arrayEnumerate(hs)) AS i
  FROM chain_current_folds
  WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour < toDateTime(intDiv(toUInt32($__toTime) + 1, 3600) * 3600))
