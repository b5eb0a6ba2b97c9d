-- The most recent distinct failure messages (column message: the error
-- message or first text block, truncated and redacted at ingest), with how
-- often each came and when it was last seen.
SELECT
  max(ts) AS last_seen,
  toString(category) AS category_,
  message AS failure_message,
  count() AS calls_n,
  uniqExact(session_key) AS sessions_n
FROM calls FINAL
WHERE $__timeFilter(ts)
  AND is_failure = 1
  AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
  AND $__conditionalAll(server IN (${server:singlequote}), $server)
  AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
GROUP BY category_, failure_message
ORDER BY last_seen DESC, calls_n DESC, failure_message
LIMIT 100
