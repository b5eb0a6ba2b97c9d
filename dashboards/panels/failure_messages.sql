-- The most recent distinct failure messages (column message: the error
-- message or first text block, truncated and redacted at ingest), with how
-- often each came and when it was last seen.
--
-- A re-ingested call counts once, as its latest ingest, without FINAL: the
-- rows of the calls ingested once, plus for each call ingested more than
-- once (its call_id occurs more than once in the range) its latest copy
-- (argMax by ingested_ms per sort key, FINAL's dedupe key). The class filter
-- applies to that latest copy, so a call reclassified by a later ingest is
-- where its latest ingest puts it. FINAL merges every row of the range in one
-- thread on ClickHouse 18.16; this costs a hash of call_id (docs/dashboards.md).
-- (Looking for duplicates only among the calls with a failed copy, as
-- unknown_tools.sql does for its rare class, was slower here: failures are
-- too common a class.)
SELECT
  max(ts_) AS last_seen,
  category_,
  message_ AS failure_message,
  count() AS calls_n,
  uniqExact(session_) AS sessions_n
FROM (
  SELECT ts AS ts_, CAST(category AS String) AS category_, message AS message_, session_key AS session_
  FROM calls
  WHERE $__timeFilter(ts)
    AND is_failure = 1
    AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
    AND $__conditionalAll(server IN (${server:singlequote}), $server)
    AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
    AND call_id GLOBAL NOT IN (
      SELECT call_id
      FROM calls
      WHERE $__timeFilter(ts)
        AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
        AND $__conditionalAll(server IN (${server:singlequote}), $server)
        AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
      GROUP BY call_id
      HAVING count() > 1)
  UNION ALL
  SELECT l.1, l.2, l.3, l.4
  FROM (
    SELECT argMax((ts, CAST(category AS String), message, session_key, is_failure), ingested_ms) AS l
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
        GROUP BY call_id
        HAVING count() > 1)
    GROUP BY tenant, server, tool, session_key, ts_ms, call_id
  )
  WHERE l.5 = 1
)
GROUP BY category_, failure_message
ORDER BY last_seen DESC, calls_n DESC, failure_message
LIMIT 100
