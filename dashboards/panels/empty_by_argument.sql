-- Empty-result rate by query condition (queries/empty_results.sql): for each
-- tool and argument key=value (top-level keys exploded at ingest into
-- arg_keys/arg_values), the share of calls that did not fail (OK and
-- EMPTY_RESULT) yet found nothing. Conditions with fewer than min_calls such
-- calls are left out. One value far above its siblings (department=finace)
-- points at a misspelled or renamed enum value rather than at missing data.
--
-- A re-ingested call counts once, as its latest ingest, without FINAL: the
-- rows of the calls ingested once (whose call_id occurs once in the range),
-- plus the latest copy (argMax by ingested_ms per sort key, FINAL's dedupe
-- key) of each call ingested more than once; the class filter applies to
-- that latest copy (docs/dashboards.md). Grouping the calls with a copy in
-- the class by the sort key, as failure_messages.sql does, would group most
-- of the range here. The calls ingested more than once are, for the hours
-- whose current fold lists its copies, the call ids the fold recorded
-- (calls_copies_folded), and for the other hours those the raw calls hold
-- more than once
-- (queries/overview.sql): 1.7-1.9 s -> 0.7-0.8 s on 18.16 over the last 24
-- hours of 10M calls (BENCHMARKS.md, twentieth round). Both sets are the same
-- expression, so a call left out of the first part is in the second; a
-- folded hour's ids outside the range or the filters only move calls of one
-- row from the first part to the second, which keeps that row.
SELECT
  tool_name,
  k AS arg_key,
  v AS arg_value,
  count() AS calls_n,
  countIf(empty_ = 1) AS empty_n,
  countIf(empty_ = 1) / count() AS empty_rate
FROM (
  SELECT CAST(tool AS String) AS tool_name, toUInt8(CAST(category AS String) = 'EMPTY_RESULT') AS empty_, arg_keys AS keys_, arg_values AS values_
  FROM calls
  WHERE $__timeFilter(ts)
    AND is_failure = 0
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
    AND call_id GLOBAL NOT IN (
      SELECT call_id
      FROM calls_copies_folded
      WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour <= $__toTime
        AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour <= $__toTime)
      UNION ALL
      SELECT call_id
      FROM calls
      WHERE $__timeFilter(ts)
        AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
        AND $__conditionalAll(server IN (${server:singlequote}), $server)
        AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
        AND toDateTime(intDiv(toUInt32(ts), 3600) * 3600, 'UTC') GLOBAL NOT IN (
          SELECT hour
          FROM calls_copies_folded
          WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour <= $__toTime
            AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour <= $__toTime))
      GROUP BY call_id
      HAVING count() > 1)
  UNION ALL
  SELECT CAST(tool AS String), toUInt8(l.2 = 'EMPTY_RESULT'), l.3, l.4
  FROM (
    SELECT tool, argMax((is_failure, CAST(category AS String), arg_keys, arg_values), ingested_ms) AS l
    FROM calls
    WHERE $__timeFilter(ts)
      AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
      AND $__conditionalAll(server IN (${server:singlequote}), $server)
      AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
      AND call_id GLOBAL IN (
        SELECT call_id
        FROM calls_copies_folded
        WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour <= $__toTime
          AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour <= $__toTime)
        UNION ALL
        SELECT call_id
        FROM calls
        WHERE $__timeFilter(ts)
          AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
          AND $__conditionalAll(server IN (${server:singlequote}), $server)
          AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
          AND toDateTime(intDiv(toUInt32(ts), 3600) * 3600, 'UTC') GLOBAL NOT IN (
            SELECT hour
            FROM calls_copies_folded
            WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour <= $__toTime
              AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour <= $__toTime))
        GROUP BY call_id
        HAVING count() > 1)
    GROUP BY tenant, server, tool, session_key, ts_ms, call_id
  )
  WHERE l.1 = 0
)
ARRAY JOIN keys_ AS k, values_ AS v
WHERE $__conditionalAll(k IN (${arg_key:singlequote}), $arg_key)
GROUP BY tool_name, arg_key, arg_value
HAVING calls_n >= ${min_calls}
ORDER BY empty_n DESC, empty_rate DESC, tool_name, arg_key, arg_value
LIMIT 200
