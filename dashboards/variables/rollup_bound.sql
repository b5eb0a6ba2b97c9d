-- rollup_bound, a hidden variable of the dashboards with the INVALID_ARGUMENT
-- spikes panel (build.go, boundVariable): the Unix second from which that
-- panel reads raw calls, as one value. It is the start of the range's first
-- hour without a current fold of calls_5m (compact.RollupHours,
-- schema/015_calls_5m_current_folds.sql) counting from the hour the range
-- starts in, or the end of the hour the range ends in when every hour has
-- one; an hour without calls has no fold, so a range with one reads raw
-- calls from there on. The panel's raw branches start there, so that the
-- server skips the days before it, and set the folded hours after it aside
-- on their time (panels/invalid_argument_spikes.sql).
-- Grafana runs this once per refresh and time range change, before the
-- panels that use it; written into the panel three times, the subquery cost
-- ClickHouse 18.16 about 60 ms, which analyses it again at every nesting
-- level above it (BENCHMARKS.md, thirty-third round).
SELECT toString(least(
  intDiv(toUInt32($__toTime) + 1, 3600) * 3600,
  intDiv(toUInt32($__fromTime), 3600) * 3600 + 3600 * if(i = 0, length(hs), toUInt64(i - 1)))) AS rollup_bound
FROM (
  SELECT
    arraySort(groupArray(toUInt32(hour))) AS hs,
    arrayFirstIndex((h, k) -> h != intDiv(toUInt32($__fromTime), 3600) * 3600 + 3600 * (k - 1), hs, arrayEnumerate(hs)) AS i
  FROM calls_5m_current_folds
  WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour < toDateTime(intDiv(toUInt32($__toTime) + 1, 3600) * 3600))
