-- Calls per tool and bucket of @step_s seconds from @origin_s, over the
-- calls of [@count_lo_s, @count_hi_ms) (@count_hi_s is that bound's second,
-- for the ts condition that prunes parts), of the tools in @tools unless
-- @all_tools = 1, and at least their INVALID_ARGUMENT calls (invalid_n):
-- every tool with a bucket past the spike floor by the exact counts (the
-- calls whose latest copy is one, which invalid_argument_latest.sql counts)
-- is past it by these. Only those tools need the exact count and a
-- baseline; in a healthy fleet there are none, and the range costs this one
-- statement. The INVALID_ARGUMENT spikes (invalid_argument_spikes.go) count
-- the range with it, and the baseline too when it is not read from the
-- rollup.
--   - A folded 5-minute cell (calls_5m_folded, compact.RollupHours) that
--     lies whole in one bucket and in the range, of an hour whose fold is
--     current (calls_5m_current_folds), is read from its fold: its distinct
--     call identities and the calls whose latest copy is INVALID_ARGUMENT,
--     exact. Grouping the raw calls' identities per tool and bucket was
--     most of the spikes endpoint over a day of 1,820 small tools on 18.16
--     (BENCHMARKS.md, nineteenth round).
--   - Every other call is read raw: the cells a bucket boundary or the
--     range's ends cut, and the hours without a current fold (the current
--     hour, an hour that took a late insert). Its calls are the distinct
--     call identities (the sort key's session_key, ts_ms, call_id) per
--     tenant, server, tool and bucket, all of which the copies of a call
--     share: a call ingested more than once counts once, without FINAL. Its
--     INVALID_ARGUMENT rows count every copy of a call.
--   - A call's copies share its cell, so each call is read from one side.
--     The raw side sets the folded cells aside on ts alone, in WHERE: 18.16
--     runs it as fast as a PREWHERE, and 26.7 picks its own PREWHERE (with
--     an explicit one, the statement took 26.7 0.8 s more over 7 days with
--     nothing folded; BENCHMARKS.md, nineteenth round).
-- Counting every row and subtracting the copies a later ingest replaced
-- (overview.sql's method) hashed every call id of the range to find the
-- copies: 1.1-1.2x slower on 18.16 at 10M calls (BENCHMARKS.md, fifteenth
-- round).
SELECT
  CAST(tool AS String) AS tool_name,
  @origin_s + intDiv(toInt64(toUInt32(bucket)) - @origin_s, @step_s) * @step_s AS bucket_s,
  toInt64(sum(identities)) AS calls_n,
  toInt64(sum(latest_invalid)) AS invalid_n
FROM calls_5m_folded
PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds)
WHERE hour >= toDateTime(intDiv(@count_lo_s, 3600) * 3600, 'UTC') AND hour <= toDateTime(@count_hi_s, 'UTC')
  AND toInt64(toUInt32(bucket)) >= @count_lo_s AND (toInt64(toUInt32(bucket)) + 300) * 1000 <= @count_hi_ms
  AND intDiv(toInt64(toUInt32(bucket)) - @origin_s, @step_s) = intDiv(toInt64(toUInt32(bucket)) + 299 - @origin_s, @step_s)
  AND (@tenant = '' OR tenant = @tenant)
  AND (@all_tenants = 1 OR has(@tenants, tenant))
  AND (@server = '' OR server = @server)
  AND (@tool = '' OR tool = @tool)
  AND (@all_tools = 1 OR tool IN @tools)
GROUP BY tool_name, bucket_s
UNION ALL
SELECT
  CAST(tool AS String) AS tool_name,
  @origin_s + intDiv(toInt64(toUInt32(ts)) - @origin_s, @step_s) * @step_s AS bucket_s,
  toInt64(uniqExact(session_key, ts_ms, call_id)) AS calls_n,
  toInt64(countIf(category = 'INVALID_ARGUMENT')) AS invalid_n
FROM calls
WHERE ts >= toDateTime(@count_lo_s, 'UTC') AND ts <= toDateTime(@count_hi_s, 'UTC')
  AND ts_ms >= @count_lo_s * 1000 AND ts_ms < @count_hi_ms
  AND NOT (toInt64(intDiv(toUInt32(ts), 300) * 300) >= @count_lo_s
    AND (toInt64(intDiv(toUInt32(ts), 300) * 300) + 300) * 1000 <= @count_hi_ms
    AND intDiv(toInt64(intDiv(toUInt32(ts), 300) * 300) - @origin_s, @step_s) = intDiv(toInt64(intDiv(toUInt32(ts), 300) * 300) + 299 - @origin_s, @step_s)
    AND toDateTime(intDiv(toUInt32(ts), 3600) * 3600, 'UTC') GLOBAL IN (SELECT hour FROM calls_5m_current_folds))
  AND (@tenant = '' OR tenant = @tenant)
  AND (@all_tenants = 1 OR has(@tenants, tenant))
  AND (@server = '' OR server = @server)
  AND (@tool = '' OR tool = @tool)
  AND (@all_tools = 1 OR tool IN @tools)
GROUP BY tenant, server, tool, bucket_s
