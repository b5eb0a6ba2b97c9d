-- The Unix second from which misflagged.sql reads the raw calls of the
-- hours that lie whole in [@from_ms, @to_ms): the start of the first of
-- them without a current fold holding calls_flags_folded's mark (calls 0;
-- schema/030_calls_flags_folded.sql), counting from @first_s, the first
-- whole hour, or @to_hour_s, the start of the hour the range ends in, when
-- every whole hour has one. The query reads raw calls before @first_s and
-- from this bound on, a constant, so that the server skips the days in
-- between; reads only the folds' marks, which hold no tenant's data.
SELECT least(
  toInt64(@to_hour_s),
  toInt64(@first_s) + 3600 * if(i = 0, toInt64(length(hs)), toInt64(i) - 1)) AS bound_s
FROM (
  SELECT
    arraySort(groupUniqArray(toInt64(toUInt32(hour)))) AS hs,
    arrayFirstIndex((h, k) -> h != @first_s + 3600 * (k - 1), hs, arrayEnumerate(hs)) AS i
  FROM calls_flags_folded
  WHERE calls = 0
    AND hour >= toDateTime(@first_s, 'UTC') AND hour < toDateTime(@to_hour_s, 'UTC')
    AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
