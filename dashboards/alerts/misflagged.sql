-- Alert MCPMisflagged: per tenant, server, tool and category, the calls in
-- the rule's range (24 hours, the API's default window) whose isError flag
-- contradicts their category, the misflagged kind of
-- queries/misclassifications.sql. Only pairs with at least one are returned;
-- the rule fires at 5, the API's default minimum.
SELECT
  tenant_name,
  server_name,
  tool_name,
  category_name,
  misflagged_n
FROM (
  SELECT
    toString(tenant) AS tenant_name,
    toString(server) AS server_name,
    toString(tool) AS tool_name,
    toString(category) AS category_name,
    sum(misflagged) AS misflagged_n
  FROM calls FINAL
  WHERE $__timeFilter(ts)
  GROUP BY tenant_name, server_name, tool_name, category_name
)
WHERE misflagged_n > 0
ORDER BY tenant_name, server_name, tool_name, category_name
