-- INVALID_ARGUMENT spikes: per tool and bucket of @step_s seconds, the share of
-- calls that failed as INVALID_ARGUMENT, compared with the tool's share over
-- the @baseline_s seconds before the bucket. A bucket is a spike when it has at
-- least @min_calls calls, a share of at least @min_share, and a share at least
-- @ratio times the baseline share (a tool with no baseline calls compares with
-- 0, so any share above the floor is a spike). A spike says that a tool's
-- schema or description confuses models. Reads [from - baseline, to) once;
-- the baseline is summed over the tool's bucket array, without window
-- functions, so the same text runs on 18.16 and modern servers. A call
-- ingested more than once counts once, as its latest ingest: the counts of
-- every row minus those of the copies a later ingest replaced (see
-- overview_totals.sql for the method; it replaces FINAL, which made this
-- query, reading eight days for the default baseline, the slowest of all).
SELECT
  tool_name,
  bucket_s,
  calls_n,
  invalid_n,
  base_calls,
  base_invalid
FROM (
  SELECT
    tool_name,
    groupArray(b) AS bs,
    groupArray(n) AS ns,
    groupArray(inv) AS invs,
    arrayMap(i -> toUInt64(arraySum(arrayFilter((y, x) -> x >= bs[i] - @baseline_s AND x < bs[i], ns, bs))), arrayEnumerate(bs)) AS base_ns,
    arrayMap(i -> toUInt64(arraySum(arrayFilter((y, x) -> x >= bs[i] - @baseline_s AND x < bs[i], invs, bs))), arrayEnumerate(bs)) AS base_invs
  FROM (
    SELECT tool_name, b, toUInt64(sum(w)) AS n, toUInt64(sum(wi)) AS inv
    FROM (
      SELECT
        CAST(tool AS String) AS tool_name,
        @origin_s + intDiv(toInt64(toUInt32(ts)) - @origin_s, @step_s) * @step_s AS b,
        toInt64(count()) AS w,
        toInt64(countIf(category = 'INVALID_ARGUMENT')) AS wi
      FROM calls
      WHERE ts >= toDateTime(@origin_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
        AND ts_ms >= @origin_s * 1000 AND ts_ms < @to_ms
        AND (@tenant = '' OR tenant = @tenant)
        AND (@all_tenants = 1 OR has(@tenants, tenant))
        AND (@server = '' OR server = @server)
        AND (@tool = '' OR tool = @tool)
      GROUP BY tool, b
      UNION ALL
      SELECT tool_name, @origin_s + intDiv(toInt64(s.2) - @origin_s, @step_s) * @step_s, toInt64(-1), -toInt64(s.3 = 'INVALID_ARGUMENT')
      FROM (
        SELECT
          CAST(tool AS String) AS tool_name,
          arrayPopFront(arraySort(x -> -x.1, groupArray((ingested_ms, toUInt32(ts), CAST(category AS String))))) AS stale
        FROM calls
        WHERE ts >= toDateTime(@origin_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
          AND ts_ms >= @origin_s * 1000 AND ts_ms < @to_ms
          AND (@tenant = '' OR tenant = @tenant)
          AND (@all_tenants = 1 OR has(@tenants, tenant))
          AND (@server = '' OR server = @server)
          AND (@tool = '' OR tool = @tool)
          AND call_id GLOBAL IN (
            SELECT call_id
            FROM calls
            WHERE ts >= toDateTime(@origin_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
              AND ts_ms >= @origin_s * 1000 AND ts_ms < @to_ms
              AND (@tenant = '' OR tenant = @tenant)
              AND (@all_tenants = 1 OR has(@tenants, tenant))
              AND (@server = '' OR server = @server)
              AND (@tool = '' OR tool = @tool)
            GROUP BY call_id
            HAVING count() > 1)
        GROUP BY tenant, server, tool, session_key, ts_ms, call_id
      )
      ARRAY JOIN stale AS s
    )
    GROUP BY tool_name, b
    HAVING sum(w) > 0
    ORDER BY tool_name, b
  )
  GROUP BY tool_name
)
ARRAY JOIN bs AS bucket_s, ns AS calls_n, invs AS invalid_n, base_ns AS base_calls, base_invs AS base_invalid
WHERE bucket_s >= @from_s
  AND calls_n >= @min_calls
  AND invalid_n >= @min_share * calls_n
  AND invalid_n * if(base_calls = 0, 1, base_calls) >= @ratio * if(base_calls = 0, 0, base_invalid) * calls_n
ORDER BY tool_name, bucket_s
