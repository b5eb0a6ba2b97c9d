-- The INVALID_ARGUMENT spikes' baseline from the 5-minute rollup calls_5m:
-- distinct call ids and distinct INVALID_ARGUMENT call ids per tool and
-- bucket of @step_s seconds from @origin_s, over the cells of
-- [@origin_s, @lo_s), each cell in the bucket its start falls in, of the
-- tools in @tools unless @all_tools = 1. Reading eight days of raw calls took seconds on
-- ClickHouse 18.16 (BENCHMARKS.md). A call re-ingested with another
-- category (a rules change) counts as INVALID_ARGUMENT here if any of its
-- ingests was one, and once among the calls (schema/004_calls_5m.sql).
SELECT
  CAST(tool AS String) AS tool_name,
  @origin_s + intDiv(toInt64(toUInt32(bucket)) - @origin_s, @step_s) * @step_s AS bucket_s,
  toInt64(uniqExactMerge(calls)) AS calls_n,
  toInt64(uniqExactMergeIf(calls, category = 'INVALID_ARGUMENT')) AS invalid_n
FROM calls_5m
WHERE bucket >= toDateTime(@origin_s, 'UTC') AND bucket < toDateTime(@lo_s, 'UTC')
  AND (@tenant = '' OR tenant = @tenant)
  AND (@all_tenants = 1 OR has(@tenants, tenant))
  AND (@server = '' OR server = @server)
  AND (@tool = '' OR tool = @tool)
  AND (@all_tools = 1 OR tool IN @tools)
GROUP BY tool_name, bucket_s
ORDER BY tool_name, bucket_s
