-- Folds the hour [@from_s, @from_s + 3600) of the UTC day @day_s of
-- calls_5m into plain counts under fold id @fold
-- (schema/013_calls_5m_days.sql): per tenant, server, tool and 5-minute
-- bucket, the counts uniqExactMerge(If) gives over the bucket's states.
-- compact.RollupDays folds a day an hour at a time, so that the call ids
-- held at once are an hour's, not a day's.
INSERT INTO calls_5m_days (day, fold, tenant, server, tool, bucket, calls, invalid, ok, empty)
SELECT
  toDate(toDateTime(@day_s, 'UTC')) AS day,
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
WHERE bucket >= toDateTime(@from_s, 'UTC') AND bucket < toDateTime(@from_s + 3600, 'UTC')
GROUP BY tenant, server, tool, bucket
