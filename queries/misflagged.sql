-- Misflagged calls (docs/analytics.md, "Misclassified retryables", the kind
-- misflagged): per tool and category, the calls in [from, to), continuations
-- included, whose isError flag contradicts their category, kept when there
-- are at least min_chains of them; total is every call of that tool and
-- category in the range. The rows have the columns of misclassifications.sql
-- (chains and recovered are 0), which queries.Misclassifications runs beside
-- this file.
-- A call ingested more than once counts once, as its latest ingest, under
-- its own tool and category, without FINAL: every row is counted, and the
-- copies a later ingest replaced are subtracted (see overview.sql): the
-- calls whose call_id occurs more than once are grouped by the whole sort
-- key, and every copy but the latest (by ingested_ms) counts -1 under the
-- category it was stored with. Relies on the daily partitions for the time
-- filter and on the (tenant, server, tool) prefix of the sort key for the
-- filters.
-- The hours that lie whole in [from, to) and that the retention job has
-- folded come from their counts per category of the latest ingest
-- (compact.RollupHours, schema/030_calls_flags_folded.sql, a current fold
-- with its mark, calls 0: the same calls, counted the same way), the other
-- hours from the raw rows; a call belongs to one hour, so the counts add
-- up. Counting every call of the range took 1.6-2.1 s over 7 days of 10M
-- calls on 18.16 and 1.0 s on 26.7, 0.53 s and 0.24 s with the fold
-- (BENCHMARKS.md, thirty-sixth round). The raw calls are read before
-- @first_s, the range's first whole hour, and from @flags_bound_s on, the
-- first whole hour without a current fold (flags_fold_hours.sql, which
-- queries.Misclassifications asks first over more than two UTC days; else
-- @first_s), constants, so that the server skips the days in between; the
-- folded hours after the bound are set aside on their time.
-- With @by_pair = 1 the rows are per tenant and server as well, their tool
-- the pair's key (retry_outcomes.sql).
SELECT kind, tool, category, chains, calls, recovered, total
FROM (
  SELECT
    'misflagged' AS kind,
    tool_m AS tool,
    category_m AS category,
    toUInt64(0) AS chains,
    toUInt64(sum(mf)) AS calls,
    toUInt64(0) AS recovered,
    toUInt64(sum(n)) AS total
  FROM (
    SELECT
      if(@by_pair = 1, concat(toString(length(tenant_g)), ':', tenant_g, toString(length(server_g)), ':', server_g, toString(tool)), toString(tool)) AS tool_m,
      CAST(category AS String) AS category_m,
      mf,
      n
    FROM (
      -- The pair as constant keys when not by pair (26.7 drops them; grouping
      -- by tenant and server made this branch 16-24 % slower there).
      SELECT
        if(@by_pair = 1, toString(tenant), '') AS tenant_g,
        if(@by_pair = 1, toString(server), '') AS server_g,
        tool,
        category,
        toInt64(sum(misflagged)) AS mf,
        toInt64(count()) AS n
      FROM calls
      PREWHERE toStartOfHour(ts) GLOBAL NOT IN (
          SELECT hour
          FROM calls_flags_folded
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
      GROUP BY tenant_g, server_g, tool, category
    )
    UNION ALL
    SELECT tool_m, s.2, -toInt64(s.3), toInt64(-1)
    FROM (
      SELECT
        if(@by_pair = 1, concat(toString(length(toString(tenant))), ':', toString(tenant), toString(length(toString(server))), ':', toString(server), toString(tool)), toString(tool)) AS tool_m,
        arrayPopFront(arraySort(x -> -x.1, groupArray((ingested_ms, CAST(category AS String), misflagged)))) AS stale
      FROM calls
      PREWHERE call_id GLOBAL IN (
        SELECT call_id
        FROM calls_copies_folded
        WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
          AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC'))
          -- not those of the hours counted from calls_flags_folded
          AND hour GLOBAL NOT IN (
            SELECT hour
            FROM calls_flags_folded
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
          FROM calls_flags_folded
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
    UNION ALL
    SELECT
      if(@by_pair = 1, concat(toString(length(toString(tenant))), ':', toString(tenant), toString(length(toString(server))), ':', toString(server), toString(tool)), toString(tool)) AS tool_m,
      CAST(category AS String) AS category_m,
      toInt64(misflagged) AS mf,
      toInt64(calls) AS n
    FROM calls_flags_folded
    PREWHERE (hour, fold) GLOBAL IN (
        SELECT hour, fold
        FROM calls_flags_folded
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
  )
  GROUP BY tool_m, category_m
  HAVING calls >= @min_chains
)
ORDER BY tool, category
