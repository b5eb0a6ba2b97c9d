-- args_bound, a hidden variable of the dashboards with the top offending
-- arguments panel (build.go, boundVariable): the Unix second from which that
-- panel reads the raw INVALID_ARGUMENT calls of the range's whole hours, as
-- one value. It is the start of the range's first whole hour without a
-- current fold of its INVALID_ARGUMENT calls' arguments (compact.RollupHours,
-- schema/025_invalid_args_folded.sql: a current calls_5m fold with the
-- table's mark, calls 0) counting from the range's first whole hour, or the
-- end of the hour the range ends in when every whole hour has one. The
-- panel reads raw calls before the range's first whole hour and from this
-- bound on, so that the server skips the days in between, and sets the
-- folded hours after it aside on their time
-- (panels/invalid_argument_top_args.sql).
-- Grafana runs this once per refresh and time range change, before the
-- panels that use it; written into the panel twice, the subquery cost
-- ClickHouse 18.16 about 30 ms, which analyses it again at every nesting
-- level above it (BENCHMARKS.md, thirty-third round).
SELECT toString(least(
  intDiv(toUInt32($__toTime) + 1, 3600) * 3600,
  intDiv(toUInt32($__fromTime) + 3599, 3600) * 3600 + 3600 * if(i = 0, length(hs), toUInt64(i - 1)))) AS args_bound
FROM (
  SELECT
    arraySort(groupUniqArray(toUInt32(hour))) AS hs,
    arrayFirstIndex((h, k) -> h != intDiv(toUInt32($__fromTime) + 3599, 3600) * 3600 + 3600 * (k - 1), hs, arrayEnumerate(hs)) AS i
  FROM invalid_args_folded
  WHERE calls = 0 AND hour >= $__fromTime AND toUInt32(hour) + 3599 <= toUInt32($__toTime) AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
