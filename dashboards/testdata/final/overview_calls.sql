-- Calls in the range: every tools/call of the selected tenants, servers and
-- tools, each counted once (FINAL).
SELECT count() AS calls_n
FROM calls FINAL
WHERE $__timeFilter(ts)
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
