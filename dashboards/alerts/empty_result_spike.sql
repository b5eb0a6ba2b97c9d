-- Alert MCPEmptyResultSpike: per tenant, server and tool, how many times the
-- empty-result rate of the last hour (EMPTY_RESULT among the calls that did
-- not fail) exceeds the tool's rate over the 7 days before it. Only tools
-- with at least 20 non-failed calls and a rate of at least 20 % in the last
-- hour are returned. As for INVALID_ARGUMENT spikes, the ratio comes from
-- integer products and a tool without empty results in the baseline gets
-- the cap, 1000. The rule's range is 7 days and 1 hour, ending now.
SELECT
  tenant_name,
  server_name,
  tool_name,
  if(base_empty = 0, toFloat64(1000), least(toFloat64(1000), (empty_n * base_ok) / (base_empty * ok_n))) AS spike_ratio
FROM (
  SELECT
    toString(tenant) AS tenant_name,
    toString(server) AS server_name,
    toString(tool) AS tool_name,
    countIf(ts > $__toTime - 3600 AND is_failure = 0) AS ok_n,
    countIf(ts > $__toTime - 3600 AND category = 'EMPTY_RESULT') AS empty_n,
    countIf(ts <= $__toTime - 3600 AND is_failure = 0) AS base_ok,
    countIf(ts <= $__toTime - 3600 AND category = 'EMPTY_RESULT') AS base_empty
  FROM calls FINAL
  WHERE $__timeFilter(ts)
  GROUP BY tenant_name, server_name, tool_name
)
WHERE ok_n >= 20 AND empty_n * 5 >= ok_n
ORDER BY tenant_name, server_name, tool_name
