-- Empty-result rate by query condition: for each tool and each argument
-- key=value (top-level keys; nested objects flattened to dotted keys at
-- ingest), the share of non-failed calls (OK + EMPTY_RESULT) that found
-- nothing. A high rate on one value (department=finace) points at a misspelled
-- or renamed enum value rather than at missing data. arg_keys/arg_values were
-- exploded at ingest because 18.16 cannot enumerate JSON keys. A call
-- ingested more than once counts once, as its latest ingest, in one pass
-- over the range's rows: each row weighs 1, but a row of a call stored more
-- than once weighs 0 unless it is of the call's latest ingest, and then
-- 1 / the rows of that ingest (an ingest inserted twice), so that the sums,
-- rounded, count each call once. The copied calls' latest ingests come,
-- for the hours whose current fold records them
-- (schema/020_calls_latest_folded.sql: a fold with its mark, call id 0),
-- from the fold, and for the other hours from the raw calls (every call id
-- with more than one row there); a call's copies share its time, so they lie
-- in one hour and all in the range or none. Subtracting the replaced copies'
-- pairs in a second pass, as overview.sql does for its counts, read every
-- argument array of the range twice, since the copies lie in every granule:
-- with 1,820 tool names over the 24 hours to noon, 1.0-1.1 s on 18.16
-- (BENCHMARKS.md, twenty-sixth round). The join is GLOBAL: in cluster mode
-- the lookup reads Distributed tables, which each shard may not read again.
SELECT
  CAST(tool AS String) AS tool_name,
  k AS arg_key,
  v AS arg_value,
  toUInt64(round(sum(w))) AS calls_n,
  toUInt64(round(sumIf(w, category = 'EMPTY_RESULT'))) AS empty_n
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
    WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
      AND call_id != 0
      AND (hour, fold) GLOBAL IN (
        SELECT hour, fold
        FROM calls_5m_current_folds
        WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC'))
    UNION ALL
    SELECT
      call_id,
      max(ingested_ms) AS latest_ms,
      toUInt64(arrayCount(x -> x = latest_ms, groupArray(ingested_ms))) AS copies
    FROM calls
    WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
      AND ts_ms >= @from_ms AND ts_ms < @to_ms
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND (@server = '' OR server = @server)
      AND (@tool = '' OR tool = @tool)
      AND toStartOfHour(ts) GLOBAL NOT IN (
        SELECT hour
        FROM calls_latest_folded
        WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
          AND call_id = 0
          AND (hour, fold) GLOBAL IN (
            SELECT hour, fold
            FROM calls_5m_current_folds
            WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')))
    GROUP BY call_id
    HAVING count() > 1
  ) AS copied USING call_id
  WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
    AND ts_ms >= @from_ms AND ts_ms < @to_ms
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
    AND is_failure = 0
)
ARRAY JOIN arg_keys AS k, arg_values AS v
WHERE @arg_key = '' OR k = @arg_key
GROUP BY tool, arg_key, arg_value
HAVING calls_n >= @min_calls
ORDER BY empty_n DESC, empty_n / calls_n DESC, tool_name, arg_key, arg_value
LIMIT @limit
