-- Records under fold @fold the calls of the UTC hour [@hour_s, @hour_s +
-- 3600) per tenant, server, tool and category
-- (schema/029_calls_categories_folded.sql): the distinct call ids of the
-- hour's calls_5m states, and the mark (calls 0). Run with the hour's other
-- fold statements, before the fold is recorded.
INSERT INTO calls_categories_folded (hour, fold, tenant, server, tool, category, calls)
SELECT toDateTime(@hour_s, 'UTC'), toUInt64(@fold), tenant_, server_, tool_, category_, n
FROM (
  SELECT
    CAST(tenant AS String) AS tenant_,
    CAST(server AS String) AS server_,
    CAST(tool AS String) AS tool_,
    CAST(category AS String) AS category_,
    toUInt64(uniqExactMerge(calls)) AS n
  FROM calls_5m
  WHERE bucket >= toDateTime(@hour_s, 'UTC') AND bucket < toDateTime(@hour_s + 3600, 'UTC')
  GROUP BY tenant_, server_, tool_, category_
  UNION ALL
  SELECT '', '', '', '', toUInt64(0))
