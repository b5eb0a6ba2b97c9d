-- The folds of the hours in [@from_s, @to_s) already made: each hour and
-- insert count that has one which lists its hour's copies and their latest
-- ingests (its marks, call id 0, in calls_copies_folded and
-- calls_latest_folded), holds its schema violations (its marks, side or
-- outcome empty, in violations_folded and violation_outcomes_folded), its
-- INVALID_ARGUMENT calls' arguments (its mark, calls 0, in
-- invalid_args_folded) and its calls per category (its marks, calls 0, in
-- calls_categories_folded and calls_flags_folded, the latter's with
-- failures 1 since schema/042) and its session keys (its mark, calls 0, in
-- sessions_folded, 043). A fold made before one of these tables
-- (or that column) existed lacks its mark, and RollupHours folds its hour
-- again, once.
SELECT DISTINCT
  toInt64(toUInt32(hour)) AS hour_s,
  inserts
FROM calls_5m_folds
WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC')
  AND (hour, fold) GLOBAL IN (
    SELECT hour, fold
    FROM calls_copies_folded
    WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC') AND call_id = 0)
  AND (hour, fold) GLOBAL IN (
    SELECT hour, fold
    FROM calls_latest_folded
    WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC') AND call_id = 0)
  AND (hour, fold) GLOBAL IN (
    SELECT hour, fold
    FROM violations_folded
    WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC') AND side = '')
  AND (hour, fold) GLOBAL IN (
    SELECT hour, fold
    FROM violation_outcomes_folded
    WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC') AND outcome = '')
  AND (hour, fold) GLOBAL IN (
    SELECT hour, fold
    FROM invalid_args_folded
    WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC') AND calls = 0)
  AND (hour, fold) GLOBAL IN (
    SELECT hour, fold
    FROM calls_categories_folded
    WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC') AND calls = 0)
  AND (hour, fold) GLOBAL IN (
    SELECT hour, fold
    FROM calls_flags_folded
    WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC') AND calls = 0 AND failures = 1)
  AND (hour, fold) GLOBAL IN (
    SELECT hour, fold
    FROM sessions_folded
    WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC') AND calls = 0)
