-- INVALID_ARGUMENT share per tool in hourly buckets, with spikes marked
-- (queries/testdata/invalid_argument_spikes_final.sql, the API's and the
-- alert's definition): a bucket is a spike when it has at least 20 calls, a
-- share of at least 5 %, and at least 3 times the tool's share over the 7
-- days before the bucket (a tool with no baseline compares with 0). The
-- spike column repeats the share in spike buckets only. Buckets are whole
-- hours, whatever the panel interval, because the spike is defined on hours.
-- The baseline is summed over each tool's bucket array without window
-- functions, in one sort: every bucket is an event at 2 * b + 1 carrying its
-- counts and every baseline's start an event at 2 * (b - 604800) carrying
-- none, so that the running sums at the starts, taken in the buckets' order,
-- are the counts before each baseline, and the baseline is the counts before
-- the bucket less those. The baseline's folded hours that lie in every range
-- bucket's 7 days (from the last bucket's start less 7 days on) are added up
-- into one bucket, the hour before the range: a range of a day then groups
-- 25 baseline buckets a tool instead of 168, which over 1,820 tool names
-- took the panel from 1.4-1.6 s to 0.35-0.39 s on 18.16 (BENCHMARKS.md,
-- eighteenth round). Not the hours read from calls_5m's states: merged into
-- one set a tool, their call ids cost 2.5 times what one set an hour does.
-- Linear in a tool's buckets: the former sum of the buckets filtered anew
-- for each bucket copied both arrays for every bucket, quadratic: over 24 h
-- with 1,820 tool names 3.7-4.7 s on 18.16 against 1.4-1.7 s (BENCHMARKS.md,
-- fourteenth round). Its 7 days before the range are read from the 5-minute
-- rollup calls_5m (distinct call ids per cell; whole hours are whole cells),
-- its complete hours from their plain counts per hour in calls_1h_folded
-- where a current fold holds them (as
-- queries/invalid_argument_baseline_rollup.sql reads calls_5m_folded: the
-- same counts, without merging seven days of states), the range itself from
-- the raw calls, where a re-ingested call counts once, as its latest ingest,
-- as the API counts it: the calls are the distinct call identities, and the
-- INVALID_ARGUMENT calls those whose latest copy is one, looked for among
-- the calls with an INVALID_ARGUMENT copy
-- (queries/invalid_argument_counts.sql, invalid_argument_latest.sql and
-- invalid_argument_baseline_rollup.sql; the panel draws every tool, so it
-- reads every baseline; docs/dashboards.md). The range's folded hours that
-- end by the range's end are read from the same folds, which hold those two
-- counts of the raw calls too (identities, latest_invalid), row by row:
-- grouped once, with the rest (grouping them first too cost 0.4 s of 1.45 s
-- over 7 days and 1,820 tools); the raw calls are read for the rest, the
-- current hour as a rule. The raw branches set the folded hours' calls aside
-- on their time alone (PREWHERE), and start at the range's first hour
-- without a current fold (a constant, so that 18.16 and 26.7 skip the
-- parts that end before it: 184,000 rows read of the day's 1.44M for the
-- last hour; BENCHMARKS.md, eighteenth round); an hour without calls has no
-- fold, so a range with one reads raw calls from there on as before. That
-- hour is the dashboard's hidden variable rollup_bound
-- (variables/rollup_bound.sql), which Grafana computes once before the
-- panels: as a scalar subquery in each of the three branches, 18.16 ran it
-- again at every nesting level above them (BENCHMARKS.md, thirty-third
-- round). FINAL
-- over eight days took seconds on ClickHouse 18.16.
SELECT
  toDateTime(bucket_s) AS time,
  tool_name,
  invalid_n / calls_n AS invalid_share,
  if(calls_n >= 20
       AND invalid_n * 20 >= calls_n
       AND invalid_n * if(base_calls = 0, 1, base_calls) >= 3 * if(base_calls = 0, 0, base_invalid) * calls_n,
     invalid_n / calls_n, NULL) AS spike
FROM (
  SELECT
    tool_name,
    arraySort(groupArray((b, n, inv))) AS c,
    arrayMap(x -> x.1, c) AS bs,
    arrayMap(x -> x.2, c) AS ns,
    arrayMap(x -> x.3, c) AS invs,
    arraySort(arrayConcat(
      arrayMap(x -> (2 * toInt64(x.1) + 1, x.2, x.3), c),
      arrayMap(x -> (2 * (toInt64(x.1) - 604800), toUInt64(0), toUInt64(0)), c))) AS ev,
    arrayFilter((s, e) -> bitAnd(e.1, 1) = 0, arrayCumSum(arrayMap(e -> e.2, ev)), ev) AS before_ns,
    arrayFilter((s, e) -> bitAnd(e.1, 1) = 0, arrayCumSum(arrayMap(e -> e.3, ev)), ev) AS before_invs,
    arrayMap((s, y, p) -> toUInt64(s - y - p), arrayCumSum(ns), ns, before_ns) AS base_ns,
    arrayMap((s, y, p) -> toUInt64(s - y - p), arrayCumSum(invs), invs, before_invs) AS base_invs
  FROM (
    SELECT tool_name, b, toUInt64(sum(n_)) AS n, toUInt64(sum(inv_)) AS inv
    FROM (
      SELECT
        toString(tool) AS tool_name,
        intDiv(toUInt32(ts), 3600) * 3600 AS b,
        toInt64(uniqExact(session_key, ts_ms, call_id)) AS n_,
        toInt64(0) AS inv_
      FROM calls
      PREWHERE NOT (toUInt32(ts) < intDiv(toUInt32($__toTime) + 1, 3600) * 3600 AND toDateTime(intDiv(toUInt32(ts), 3600) * 3600, 'UTC') GLOBAL IN (SELECT hour FROM calls_5m_current_folds))
      WHERE ts >= toDateTime(${rollup_bound})
        AND ts <= $__toTime
        AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
        AND $__conditionalAll(server IN (${server:singlequote}), $server)
        AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
      GROUP BY tenant, server, tool, b
      UNION ALL
      SELECT tool_name, intDiv(t, 3600) * 3600, toInt64(0), toInt64(latest = 'INVALID_ARGUMENT')
      FROM (
        SELECT
          toString(tool) AS tool_name,
          any(toUInt32(ts)) AS t,
          argMax(CAST(category AS String), ingested_ms) AS latest
        FROM calls
        PREWHERE NOT (toUInt32(ts) < intDiv(toUInt32($__toTime) + 1, 3600) * 3600 AND toDateTime(intDiv(toUInt32(ts), 3600) * 3600, 'UTC') GLOBAL IN (SELECT hour FROM calls_5m_current_folds))
        WHERE ts >= toDateTime(${rollup_bound})
          AND ts <= $__toTime
          AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
          AND $__conditionalAll(server IN (${server:singlequote}), $server)
          AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
          AND call_id GLOBAL IN (
            SELECT call_id
            FROM calls
            PREWHERE NOT (toUInt32(ts) < intDiv(toUInt32($__toTime) + 1, 3600) * 3600 AND toDateTime(intDiv(toUInt32(ts), 3600) * 3600, 'UTC') GLOBAL IN (SELECT hour FROM calls_5m_current_folds))
            WHERE ts >= toDateTime(${rollup_bound})
              AND ts <= $__toTime
              AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
              AND $__conditionalAll(server IN (${server:singlequote}), $server)
              AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
              AND category = 'INVALID_ARGUMENT')
        GROUP BY tenant, server, tool, session_key, ts_ms, call_id
      )
      UNION ALL
      SELECT
        toString(tool) AS tool_name,
        toUInt32(hour) AS b,
        toInt64(identities) AS n_,
        toInt64(latest_invalid) AS inv_
      FROM calls_1h_folded
      PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds)
      WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour < toDateTime(intDiv(toUInt32($__toTime) + 1, 3600) * 3600)
        AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
        AND $__conditionalAll(server IN (${server:singlequote}), $server)
        AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
      UNION ALL
      SELECT
        toString(tool) AS tool_name,
        if(toUInt32(hour) + 604800 >= intDiv(toUInt32($__toTime), 3600) * 3600, toUInt32(intDiv(toUInt32($__fromTime), 3600) * 3600 - 3600), toUInt32(hour)) AS b,
        toInt64(sum(calls)) AS n_,
        toInt64(sum(invalid)) AS inv_
      FROM calls_1h_folded
      PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds)
      WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600 - 604800) AND hour < toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600)
        AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
        AND $__conditionalAll(server IN (${server:singlequote}), $server)
        AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
      GROUP BY tool_name, b
      UNION ALL
      SELECT
        toString(tool) AS tool_name,
        intDiv(toUInt32(bucket), 3600) * 3600 AS b,
        toInt64(uniqExactMerge(calls)) AS n_,
        toInt64(uniqExactMergeIf(calls, category = 'INVALID_ARGUMENT')) AS inv_
      FROM calls_5m
      PREWHERE toDateTime(intDiv(toUInt32(bucket), 3600) * 3600, 'UTC') GLOBAL NOT IN (SELECT hour FROM calls_5m_current_folds)
      WHERE bucket >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600 - 604800)
        AND bucket < toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600)
        AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
        AND $__conditionalAll(server IN (${server:singlequote}), $server)
        AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
      GROUP BY tool_name, b
    )
    GROUP BY tool_name, b
    HAVING n > 0
  )
  GROUP BY tool_name
)
ARRAY JOIN bs AS bucket_s, ns AS calls_n, invs AS invalid_n, base_ns AS base_calls, base_invs AS base_invalid
WHERE bucket_s >= intDiv(toUInt32($__fromTime), 3600) * 3600
ORDER BY time, tool_name
