-- Folds the UTC day [@from_s, @from_s + 86400) of calls_5m into plain counts
-- under fold id @fold (schema/013_calls_5m_days.sql): per tenant, server,
-- tool and 5-minute bucket, the counts uniqExactMerge(If) gives over the
-- bucket's states.
INSERT INTO calls_5m_days (day, fold, tenant, server, tool, bucket, calls, invalid, ok, empty)
SELECT
  toDate(toDateTime(@from_s, 'UTC')) AS day,
  toUInt64(@fold) AS fold,
  tenant,
  server,
  tool,
  bucket,
  toUInt64(uniqExactMerge(calls)),
  toUInt64(uniqExactMergeIf(calls, category = 'INVALID_ARGUMENT')),
  toUInt64(uniqExactMergeIf(calls, is_failure = 0)),
  toUInt64(uniqExactMergeIf(calls, category = 'EMPTY_RESULT'))
FROM calls_5m
WHERE bucket >= toDateTime(@from_s, 'UTC') AND bucket < toDateTime(@from_s + 86400, 'UTC')
GROUP BY tenant, server, tool, bucket
