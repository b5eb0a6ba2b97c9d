-- Calls of the trailing window per tenant, server, tool and category, with
-- how many of them were misflagged (isError contradicts the category), the
-- busiest first so that the cardinality cap keeps the series that matter.
-- Reads calls FINAL so a re-ingested call counts once; relies on the daily
-- partitions for the time filter.
SELECT
  CAST(tenant AS String) AS tenant_name,
  CAST(server AS String) AS server_name,
  CAST(tool AS String) AS tool_name,
  CAST(category AS String) AS category_name,
  max(is_failure) AS failure,
  count() AS calls_n,
  sum(misflagged) AS misflagged_n
FROM calls FINAL
WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
  AND ts_ms >= @from_ms AND ts_ms < @to_ms
GROUP BY tenant_name, server_name, tool_name, category_name
ORDER BY calls_n DESC, tenant_name, server_name, tool_name, category_name
