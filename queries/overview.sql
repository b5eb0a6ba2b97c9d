-- The overview of a range in one query: per tool, its calls, failures,
-- empty results (of the non-failed calls) and calls whose isError contradicts
-- their class (part 0), and the distinct session keys of the range (part 1,
-- one row). The range's totals are the tools' sums; the most failing tools
-- are read from the same rows (queries/overview.go). One query, not one for
-- the totals and one for the tools: both paid the search for re-ingested
-- calls below.
--
-- A call ingested more than once counts once, as its latest ingest (the row
-- FINAL would keep). The hours that lie whole in [from, to) and that the
-- retention job has folded come from their counts per category of the
-- latest ingest (compact.RollupHours, schema/030_calls_flags_folded.sql
-- and 042, the same calls counted the same way, as misflagged.sql reads
-- them); a call belongs to one hour, so the counts add up. Over 7 days of
-- 10M calls the counts and their copies took 18.16 0.77 s of the query's
-- 1.15 s (BENCHMARKS.md, fifty-fifth round). Those hours are the ones
-- whose current fold holds sessions_folded's mark (043, calls 0): such a
-- fold was made since 043, so its flags rows count failures
-- (overview_fold_hours.sql). The other hours are counted from the raw rows,
-- without FINAL: every row is counted, minus the copies that a later
-- ingest of the same call replaced. Those stale copies are found among the
-- rows whose call_id occurs more than once, grouped by the sort key
-- (FINAL's dedupe key) and ordered by ingested_ms. FINAL merges every row
-- of the range in one thread on 18.16; this costs a hash of call_id
-- instead (BENCHMARKS.md). The call ids that occur more than once are, for
-- the hours whose current fold lists its copies, those the fold recorded
-- (calls_copies_folded: a call's copies share its hour; a fold made before
-- that table lists none), and for the other hours those the raw calls hold
-- more than once: grouping every call id of a day took most of this
-- query's time (BENCHMARKS.md, twentieth round). A folded hour's copied ids
-- outside the range or the filters only add calls whose group is then left
-- out or has no stale copy. The set is a PREWHERE: the other columns are
-- read only from the granules that hold a copy (half the bytes with 1 % of
-- the calls copied, none without copies). The raw calls are read before
-- @first_s, the range's first whole hour, and from @flags_bound_s on, the
-- first whole hour without such a fold (overview_fold_hours.sql, asked first
-- over more than two UTC days; else @first_s), constants, so that the
-- server skips the days in between; the folded hours after the bound are
-- set aside on their time.
-- GLOBAL IN builds the set once: with IN inside a subquery, 18.16 ran the
-- set's query again for each level.
-- The distinct session keys of the range: a count of distinct keys does
-- not add up over hours, but the keys do. The same folded hours' keys come
-- from their fold (sessions_folded: once per tenant, server and hour, with
-- the tools it called), the others' from the raw calls. Over 7 days of 10M
-- calls the raw keys took 18.16 0.38 s of the query's 0.56 s; with the
-- fold the query takes 0.25 s (BENCHMARKS.md, fifty-fifth and fifty-sixth
-- rounds). Copies share tool and session key, so the tools and the distinct
-- session keys need no correction. Relies on the daily partitions for the
-- time filter and on the (tenant, server, tool) prefix of the sort key for
-- the filters.
SELECT
  part,
  tool_name,
  toUInt64(sum(n)) AS calls_n,
  toUInt64(sum(fail)) AS failures_n,
  toUInt64(sum(empty)) AS empty_n,
  toUInt64(sum(mf)) AS misflagged_n,
  toUInt64(sum(sessions)) AS sessions_n
FROM (
  -- Fold branch: the whole hours that have a current fold with the
  -- session keys (Overview leaves it out, with the conditions that set
  -- those hours aside, when the bound lets the server skip no day:
  -- overviewForms).
  SELECT
    toUInt8(0) AS part,
    CAST(tool AS String) AS tool_name,
    toInt64(calls) AS n,
    toInt64(failures) AS fail,
    toInt64(if(category = 'EMPTY_RESULT', calls, 0)) AS empty,
    toInt64(misflagged) AS mf,
    toInt64(0) AS sessions
  FROM calls_flags_folded
  PREWHERE (hour, fold) GLOBAL IN (
      SELECT hour, fold
      FROM sessions_folded
      WHERE calls = 0
        AND hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
        AND toInt64(toUInt32(hour)) * 1000 >= @from_ms AND (toInt64(toUInt32(hour)) + 3600) * 1000 <= @to_ms
        AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
  WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
    AND calls > 0
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
  UNION ALL
  SELECT
    toUInt8(0) AS part,
    CAST(tool AS String) AS tool_name,
    toInt64(count()) AS n,
    toInt64(sum(is_failure)) AS fail,
    toInt64(countIf(category = 'EMPTY_RESULT')) AS empty,
    toInt64(sum(misflagged)) AS mf,
    toInt64(0) AS sessions
  FROM calls
  PREWHERE toStartOfHour(ts) GLOBAL NOT IN (
      SELECT hour
      FROM sessions_folded
      WHERE calls = 0
        AND hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
        AND toInt64(toUInt32(hour)) * 1000 >= @from_ms AND (toInt64(toUInt32(hour)) + 3600) * 1000 <= @to_ms
        AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
  WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
    AND ts_ms >= @from_ms AND ts_ms < @to_ms
    AND (ts < toDateTime(@first_s, 'UTC') OR ts >= toDateTime(@flags_bound_s, 'UTC'))
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
  GROUP BY tool
  UNION ALL
  SELECT toUInt8(1), '', toInt64(0), toInt64(0), toInt64(0), toInt64(0), toInt64(uniqExact(key_))
  FROM (
    -- Fold branch: the session keys of the same hours, once an hour, with
    -- the tools each called (Overview leaves it out with the other).
    SELECT session_key AS key_
    FROM sessions_folded
    PREWHERE (hour, fold) GLOBAL IN (
        SELECT hour, fold
        FROM sessions_folded
        WHERE calls = 0
          AND hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
          AND toInt64(toUInt32(hour)) * 1000 >= @from_ms AND (toInt64(toUInt32(hour)) + 3600) * 1000 <= @to_ms
          AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
    WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
      AND calls > 0
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND (@server = '' OR server = @server)
      AND (@tool = '' OR has(tools, @tool))
    UNION ALL
    -- A key read twice counts once: the folded hours after the bound are
    -- not set aside.
    SELECT session_key AS key_
    FROM calls
    WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
      AND ts_ms >= @from_ms AND ts_ms < @to_ms
      AND (ts < toDateTime(@first_s, 'UTC') OR ts >= toDateTime(@flags_bound_s, 'UTC'))
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND (@server = '' OR server = @server)
      AND (@tool = '' OR tool = @tool))
  UNION ALL
  SELECT toUInt8(0), tool_name, toInt64(-1), -toInt64(s.2), -toInt64(s.3 = 'EMPTY_RESULT'), -toInt64(s.4), toInt64(0)
  FROM (
    SELECT
      CAST(tool AS String) AS tool_name,
      arrayPopFront(arraySort(x -> -x.1, groupArray((ingested_ms, is_failure, CAST(category AS String), misflagged)))) AS stale
    FROM calls
    PREWHERE call_id GLOBAL IN (
      SELECT call_id
      FROM calls_copies_folded
      WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
        AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC'))
        -- not those of the hours counted from the folds
        AND hour GLOBAL NOT IN (
          SELECT hour
          FROM sessions_folded
          WHERE calls = 0
            AND hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
            AND toInt64(toUInt32(hour)) * 1000 >= @from_ms AND (toInt64(toUInt32(hour)) + 3600) * 1000 <= @to_ms
            AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
      UNION ALL
      SELECT call_id
      FROM calls
      WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
        AND ts_ms >= @from_ms AND ts_ms < @to_ms
        AND (ts < toDateTime(@first_s, 'UTC') OR ts >= toDateTime(@flags_bound_s, 'UTC'))
        AND (@tenant = '' OR tenant = @tenant)
        AND (@all_tenants = 1 OR has(@tenants, tenant))
        AND (@server = '' OR server = @server)
        AND (@tool = '' OR tool = @tool)
        AND toStartOfHour(ts) GLOBAL NOT IN (
          SELECT hour
          FROM calls_copies_folded
          WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
            AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')))
      GROUP BY call_id
      HAVING count() > 1)
    WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
      AND (ts < toDateTime(@first_s, 'UTC') OR ts >= toDateTime(@flags_bound_s, 'UTC'))
      AND toStartOfHour(ts) GLOBAL NOT IN (
        SELECT hour
        FROM sessions_folded
        WHERE calls = 0
          AND hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
          AND toInt64(toUInt32(hour)) * 1000 >= @from_ms AND (toInt64(toUInt32(hour)) + 3600) * 1000 <= @to_ms
          AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
      AND ts_ms >= @from_ms AND ts_ms < @to_ms
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND (@server = '' OR server = @server)
      AND (@tool = '' OR tool = @tool)
    GROUP BY tenant, server, tool, session_key, ts_ms, call_id
  )
  ARRAY JOIN stale AS s
)
GROUP BY part, tool_name
ORDER BY part, tool_name
