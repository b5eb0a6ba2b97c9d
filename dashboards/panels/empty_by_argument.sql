-- Empty-result rate by query condition (queries/empty_results.sql): for each
-- tool and argument key=value (top-level keys exploded at ingest into
-- arg_keys/arg_values), the share of calls that did not fail (OK and
-- EMPTY_RESULT) yet found nothing. Conditions with fewer than min_calls such
-- calls are left out. One value far above its siblings (department=finace)
-- points at a misspelled or renamed enum value rather than at missing data.
--
-- A re-ingested call counts once, as its latest ingest, without FINAL, in
-- one pass over the range's rows, as queries/empty_results.sql counts it:
-- each row weighs 1, but a row of a call stored more than once weighs 0
-- unless it is of the call's latest ingest, and then 1 / the rows of that
-- ingest, the sums rounded; the class filter applies to that latest copy
-- (docs/dashboards.md). The copied calls' latest ingests come, for the hours
-- whose current fold records them (calls_latest_folded, a fold with its
-- mark, call id 0), from the fold, and for the other hours from the raw
-- calls that hold their call id more than once. Reading the calls ingested
-- once and the latest copies of the others apart read every argument array
-- of the range twice, since the copies lie in every granule (BENCHMARKS.md,
-- twenty-sixth round; grouping every call id of the range instead of the
-- fold's list: 1.7-1.9 s -> 0.7-0.8 s on 18.16 over the last 24 hours of
-- 10M calls in the twentieth round).
SELECT
  CAST(tool AS String) AS tool_name,
  k AS arg_key,
  v AS arg_value,
  toUInt64(round(sum(w))) AS calls_n,
  toUInt64(round(sumIf(w, category = 'EMPTY_RESULT'))) AS empty_n,
  empty_n / calls_n AS empty_rate
FROM (
  SELECT
    tool,
    category,
    arg_keys,
    arg_values,
    if(copies = 0, 1., if(ingested_ms = latest_ms, 1. / copies, 0.)) AS w
  FROM calls
  GLOBAL ANY LEFT JOIN (
    SELECT call_id, latest_ms, copies
    FROM calls_latest_folded
    WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour <= $__toTime
      AND call_id != 0
      AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour <= $__toTime)
    UNION ALL
    SELECT
      call_id,
      max(ingested_ms) AS latest_ms,
      toUInt64(arrayCount(x -> x = latest_ms, groupArray(ingested_ms))) AS copies
    FROM calls
    WHERE $__timeFilter(ts)
      AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
      AND $__conditionalAll(server IN (${server:singlequote}), $server)
      AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
      AND toDateTime(intDiv(toUInt32(ts), 3600) * 3600, 'UTC') GLOBAL NOT IN (
        SELECT hour
        FROM calls_latest_folded
        WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour <= $__toTime
          AND call_id = 0
          AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds WHERE hour >= toDateTime(intDiv(toUInt32($__fromTime), 3600) * 3600) AND hour <= $__toTime))
    GROUP BY call_id
    HAVING count() > 1
  ) AS copied USING call_id
  WHERE $__timeFilter(ts)
    AND is_failure = 0
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
)
ARRAY JOIN arg_keys AS k, arg_values AS v
WHERE $__conditionalAll(k IN (${arg_key:singlequote}), $arg_key)
GROUP BY tool_name, arg_key, arg_value
HAVING calls_n >= ${min_calls}
ORDER BY empty_n DESC, empty_rate DESC, tool_name, arg_key, arg_value
LIMIT 200
