-- The most recent distinct failure messages (column message: the error
-- message or first text block, truncated and redacted at ingest), with how
-- often each came and when it was last seen.
--
-- A re-ingested call counts once, as its latest ingest, without FINAL: only
-- a call with a failed copy can be a failure, so those calls are found
-- first, and each, grouped by its identity (the sort key, FINAL's dedupe
-- key), counts when its latest copy (largest ingested_ms) failed, with that
-- copy's category and message; a call reclassified by a later ingest is
-- where its latest ingest puts it (docs/dashboards.md). The rows of the
-- calls ingested once plus the latest copy of each call ingested more than
-- once, found by hashing every call id of the range, took 1.5x as long on
-- 18.16 at 10M calls with 15 % failed and 2x with 3 % (BENCHMARKS.md,
-- sixteenth round). FINAL merges every row of the range in one thread on
-- ClickHouse 18.16.
SELECT
  max(ts_) AS last_seen,
  category_,
  message_ AS failure_message,
  count() AS calls_n,
  uniqExact(session_) AS sessions_n
FROM (
  SELECT l.1 AS ts_, l.2 AS category_, l.3 AS message_, session_
  FROM (
    SELECT
      session_key AS session_,
      argMax((ts, CAST(category AS String), message, is_failure), ingested_ms) AS l
    FROM calls
    WHERE $__timeFilter(ts)
      AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
      AND $__conditionalAll(server IN (${server:singlequote}), $server)
      AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
      AND call_id GLOBAL IN (
        SELECT call_id
        FROM calls
        WHERE $__timeFilter(ts)
          AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
          AND $__conditionalAll(server IN (${server:singlequote}), $server)
          AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
          AND is_failure = 1)
    GROUP BY tenant, server, tool, session_key, ts_ms, call_id
  )
  WHERE l.4 = 1
)
GROUP BY category_, failure_message
ORDER BY last_seen DESC, calls_n DESC, failure_message
LIMIT 100
