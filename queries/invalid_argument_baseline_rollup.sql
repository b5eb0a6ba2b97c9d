-- The INVALID_ARGUMENT spikes' baseline from the 5-minute rollup calls_5m:
-- distinct call ids and distinct INVALID_ARGUMENT call ids per tool and
-- bucket of @step_s seconds from @origin_s, over the cells of
-- [@origin_s, @lo_s), each cell in the bucket its start falls in, of the
-- tools in @tools unless @all_tools = 1. Reading eight days of raw calls took seconds on
-- ClickHouse 18.16 (BENCHMARKS.md). A call re-ingested with another
-- category (a rules change) counts as INVALID_ARGUMENT here if any of its
-- ingests was one, and once among the calls (schema/004_calls_5m.sql).
-- Complete hours folded into plain counts (calls_5m_folded,
-- compact.RollupHours) are added up instead of merging their states: an
-- hour is read from its latest fold made at the insert count
-- calls_hour_inserts has for it now (schema/015_calls_5m_current_folds.sql),
-- every other hour from calls_5m, so that the answer is the same either
-- way. Over 7 days of 1,820 tools' states the merge took 0.4-0.55 s of the
-- spikes endpoint (BENCHMARKS.md, seventeenth round). The hours' conditions
-- are PREWHERE: as a WHERE, 18.16 read the states of every folded hour
-- before setting them aside (0.24 s instead of 0.03 s).
-- The folded hours of [@lump_lo_s, @lump_hi_s), which lie in every range
-- bucket's baseline (baselineLump in invalid_argument_spikes.go), come from
-- their hourly sums (calls_1h_folded) added up into one cell per tool at
-- @lump_s, which the spike rule counts in each of those baselines: a day's
-- range reads 25 cells a tool instead of 168 (over 1,820 tools 0.07-0.09 s
-- instead of 1.0-1.2 s on 18.16; BENCHMARKS.md, nineteenth round). An empty
-- lump (@lump_lo_s = @lump_hi_s) reads every folded hour by bucket.
SELECT tool_name, bucket_s, toInt64(sum(calls_)) AS calls_n, toInt64(sum(invalid_)) AS invalid_n
FROM (
  SELECT
    CAST(tool AS String) AS tool_name,
    toInt64(@lump_s) AS bucket_s,
    sum(calls) AS calls_,
    sum(invalid) AS invalid_
  FROM calls_1h_folded
  PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds)
  WHERE hour >= toDateTime(@lump_lo_s, 'UTC') AND hour < toDateTime(@lump_hi_s, 'UTC')
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
    AND (@all_tools = 1 OR tool IN @tools)
  GROUP BY tool_name
  UNION ALL
  SELECT
    CAST(tool AS String) AS tool_name,
    @origin_s + intDiv(toInt64(toUInt32(bucket)) - @origin_s, @step_s) * @step_s AS bucket_s,
    sum(calls) AS calls_,
    sum(invalid) AS invalid_
  FROM calls_5m_folded
  PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds)
  WHERE bucket >= toDateTime(@origin_s, 'UTC') AND bucket < toDateTime(@lo_s, 'UTC')
    AND hour >= toDateTime(intDiv(@origin_s, 3600) * 3600, 'UTC') AND hour < toDateTime(@lo_s, 'UTC')
    AND (hour < toDateTime(@lump_lo_s, 'UTC') OR hour >= toDateTime(@lump_hi_s, 'UTC'))
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
    AND (@all_tools = 1 OR tool IN @tools)
  GROUP BY tool_name, bucket_s
  UNION ALL
  SELECT
    CAST(tool AS String) AS tool_name,
    @origin_s + intDiv(toInt64(toUInt32(bucket)) - @origin_s, @step_s) * @step_s AS bucket_s,
    toUInt64(uniqExactMerge(calls)) AS calls_,
    toUInt64(uniqExactMergeIf(calls, category = 'INVALID_ARGUMENT')) AS invalid_
  FROM calls_5m
  PREWHERE toDateTime(intDiv(toUInt32(bucket), 3600) * 3600, 'UTC') GLOBAL NOT IN (SELECT hour FROM calls_5m_current_folds)
  WHERE bucket >= toDateTime(@origin_s, 'UTC') AND bucket < toDateTime(@lo_s, 'UTC')
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
    AND (@all_tools = 1 OR tool IN @tools)
  GROUP BY tool_name, bucket_s
)
GROUP BY tool_name, bucket_s
ORDER BY tool_name, bucket_s
