-- Calls per tool and bucket of @step_s seconds from @origin_s, over the
-- calls of [@count_lo_s, @count_hi_ms) (@count_hi_s is that bound's second,
-- for the ts condition that prunes parts), of the tools in @tools unless
-- @all_tools = 1, with their INVALID_ARGUMENT rows. The INVALID_ARGUMENT
-- spikes (invalid_argument_spikes.go) count the range with it, and the
-- baseline too when it is not read from the rollup.
--   - The calls are the distinct call identities (the sort key's
--     session_key, ts_ms, call_id) per tenant, server, tool and bucket, all
--     of which the copies of a call share: a call ingested more than once
--     counts once, without FINAL.
--   - The INVALID_ARGUMENT rows count every copy of a call: at least its
--     INVALID_ARGUMENT calls (the calls whose latest copy is one, which
--     invalid_argument_latest.sql counts), so that every tool with a bucket
--     past the spike floor by the exact counts is past it by these. Only
--     those tools need the exact count and a baseline; in a healthy fleet
--     there are none, and the range costs this one scan (0.23-0.28 s against
--     0.36-0.42 s for both counts in one statement on 18.16 at 10M calls;
--     BENCHMARKS.md, sixteenth round).
-- Counting every row and subtracting the copies a later ingest replaced
-- (overview.sql's method) hashed every call id of the range to find the
-- copies: 1.1-1.2x slower on 18.16 at 10M calls (BENCHMARKS.md, fifteenth
-- round).
SELECT tool_name, b AS bucket_s, toInt64(sum(n_)) AS calls_n, toInt64(sum(inv_)) AS invalid_n
FROM (
  SELECT
    CAST(tool AS String) AS tool_name,
    @origin_s + intDiv(toInt64(toUInt32(ts)) - @origin_s, @step_s) * @step_s AS b,
    toInt64(uniqExact(session_key, ts_ms, call_id)) AS n_,
    toInt64(countIf(category = 'INVALID_ARGUMENT')) AS inv_
  FROM calls
  WHERE ts >= toDateTime(@count_lo_s, 'UTC') AND ts <= toDateTime(@count_hi_s, 'UTC')
    AND ts_ms >= @count_lo_s * 1000 AND ts_ms < @count_hi_ms
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
    AND (@all_tools = 1 OR tool IN @tools)
  GROUP BY tenant, server, tool, b
)
GROUP BY tool_name, b
ORDER BY tool_name, bucket_s
