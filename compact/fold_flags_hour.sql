-- Records under fold @fold the calls of the UTC hour [@hour_s, @hour_s +
-- 3600) per tenant, server, tool and category, each call once as its latest
-- ingest (its rows grouped by the table's sorting key, the copy with the
-- largest ingested_ms), with those whose latest ingest is misflagged and
-- those whose latest ingest failed (schema/030_calls_flags_folded.sql,
-- 042), and the mark (calls 0, failures 1: a fold that counts failures).
-- Run with the hour's other fold statements, before the fold is recorded.
INSERT INTO calls_flags_folded (hour, fold, tenant, server, tool, category, calls, misflagged, failures)
SELECT toDateTime(@hour_s, 'UTC'), toUInt64(@fold), tenant_, server_, tool_, category_, n, mf, fl
FROM (
  SELECT tenant_, server_, tool_, l.1 AS category_, toUInt64(count()) AS n, toUInt64(sum(l.2)) AS mf, toUInt64(sum(l.3)) AS fl
  FROM (
    SELECT
      CAST(tenant AS String) AS tenant_,
      CAST(server AS String) AS server_,
      CAST(tool AS String) AS tool_,
      argMax((CAST(category AS String), misflagged, is_failure), ingested_ms) AS l
    FROM calls
    WHERE ts >= toDateTime(@hour_s, 'UTC') AND ts < toDateTime(@hour_s + 3600, 'UTC')
    GROUP BY tenant, server, tool, session_key, ts_ms, call_id
  )
  GROUP BY tenant_, server_, tool_, category_
  UNION ALL
  SELECT '', '', '', '', toUInt64(0), toUInt64(0), toUInt64(1))
