-- INVALID_ARGUMENT spikes (invalid_argument_spikes.sql: same question, same
-- columns, same order) with the baseline read from the 5-minute rollup
-- calls_5m. Buckets of @step_s seconds from @origin_s, as there; the calls of
-- [@lo_s, to), where @lo_s is the start of the 5-minute cell that holds from,
-- are counted from the raw calls, the cells of [@origin_s, @lo_s) from the
-- rollup, each cell in the bucket its start falls in. FINAL over eight days
-- was the cost of the raw form on ClickHouse 18.16 (5.6 s at 10M calls;
-- BENCHMARKS.md); here the raw part is the window and counts a re-ingested
-- call once by subtracting the copies a later ingest replaced (see
-- overview_totals.sql), and the rollup counts distinct call ids per cell.
-- Two differences from the raw form, both in the baseline only: when from is
-- not on a 5-minute boundary, a cell that straddles a bucket boundary of the
-- baseline counts in the earlier bucket (and one before @origin_s is left
-- out); and a call re-ingested with another category (a rules change) counts
-- as INVALID_ARGUMENT in the baseline if any of its ingests was one
-- (schema/004_calls_5m.sql). Calls, invalid calls and the share of the
-- reported buckets are exact. InvalidArgumentSpikes uses this form when the
-- step is a whole number of 5-minute cells.
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
    SELECT tool_name, b, toUInt64(sum(n_)) AS n, toUInt64(sum(inv_)) AS inv
    FROM (
      SELECT
        CAST(tool AS String) AS tool_name,
        @origin_s + intDiv(toInt64(toUInt32(ts)) - @origin_s, @step_s) * @step_s AS b,
        toInt64(count()) AS n_,
        toInt64(countIf(category = 'INVALID_ARGUMENT')) AS inv_
      FROM calls
      WHERE ts >= toDateTime(@lo_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
        AND ts_ms >= @lo_s * 1000 AND ts_ms < @to_ms
        AND (@tenant = '' OR tenant = @tenant)
        AND (@all_tenants = 1 OR has(@tenants, tenant))
        AND (@server = '' OR server = @server)
        AND (@tool = '' OR tool = @tool)
      GROUP BY tool_name, b
      UNION ALL
      SELECT tool_name, @origin_s + intDiv(toInt64(s.2) - @origin_s, @step_s) * @step_s, toInt64(-1), -toInt64(s.3 = 'INVALID_ARGUMENT')
      FROM (
        SELECT
          CAST(tool AS String) AS tool_name,
          arrayPopFront(arraySort(x -> -x.1, groupArray((ingested_ms, toUInt32(ts), CAST(category AS String))))) AS stale
        FROM calls
        WHERE ts >= toDateTime(@lo_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
          AND ts_ms >= @lo_s * 1000 AND ts_ms < @to_ms
          AND (@tenant = '' OR tenant = @tenant)
          AND (@all_tenants = 1 OR has(@tenants, tenant))
          AND (@server = '' OR server = @server)
          AND (@tool = '' OR tool = @tool)
          AND call_id GLOBAL IN (
            SELECT call_id
            FROM calls
            WHERE ts >= toDateTime(@lo_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
              AND ts_ms >= @lo_s * 1000 AND ts_ms < @to_ms
              AND (@tenant = '' OR tenant = @tenant)
              AND (@all_tenants = 1 OR has(@tenants, tenant))
              AND (@server = '' OR server = @server)
              AND (@tool = '' OR tool = @tool)
            GROUP BY call_id
            HAVING count() > 1)
        GROUP BY tenant, server, tool, session_key, ts_ms, call_id
      )
      ARRAY JOIN stale AS s
      UNION ALL
      SELECT
        CAST(tool AS String) AS tool_name,
        @origin_s + intDiv(toInt64(toUInt32(bucket)) - @origin_s, @step_s) * @step_s AS b,
        toInt64(uniqExactMerge(calls)) AS n_,
        toInt64(uniqExactMergeIf(calls, category = 'INVALID_ARGUMENT')) AS inv_
      FROM calls_5m
      WHERE bucket >= toDateTime(@origin_s, 'UTC') AND bucket < toDateTime(@lo_s, 'UTC')
        AND (@tenant = '' OR tenant = @tenant)
        AND (@all_tenants = 1 OR has(@tenants, tenant))
        AND (@server = '' OR server = @server)
        AND (@tool = '' OR tool = @tool)
      GROUP BY tool_name, b
    )
    GROUP BY tool_name, b
    HAVING n > 0
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
