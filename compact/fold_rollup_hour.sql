-- Folds the UTC hour [@hour_s, @hour_s + 3600) under fold id @fold
-- (schema/013_calls_5m_folded.sql), one row per tenant, server,
-- tool and 5-minute bucket: from calls_5m, the counts uniqExactMerge(If)
-- gives over the bucket's states; from the raw calls, the distinct call
-- identities and those whose latest ingest (argMax by ingested_ms) is
-- INVALID_ARGUMENT, as the spikes panel counts its range (every copy of a
-- call shares its time, so a call is in one bucket). One row per bucket
-- rather than one per source halves what a reader of either reads. An
-- hour's call ids are what the fold holds at once: a day's states in one
-- statement took 323 MiB on 18.16 for 1.44M calls (BENCHMARKS.md).
INSERT INTO calls_5m_folded (hour, fold, tenant, server, tool, bucket, calls, invalid, ok, empty, identities, latest_invalid)
SELECT
  toDateTime(@hour_s, 'UTC') AS hour,
  toUInt64(@fold) AS fold,
  tenant,
  server,
  tool,
  bucket,
  sum(c),
  sum(i),
  sum(o),
  sum(e),
  sum(id),
  sum(li)
FROM (
  SELECT
    tenant,
    server,
    tool,
    bucket,
    toUInt64(uniqExactMerge(calls)) AS c,
    toUInt64(uniqExactMergeIf(calls, category = 'INVALID_ARGUMENT')) AS i,
    toUInt64(uniqExactMergeIf(calls, is_failure = 0)) AS o,
    toUInt64(uniqExactMergeIf(calls, category = 'EMPTY_RESULT')) AS e,
    toUInt64(0) AS id,
    toUInt64(0) AS li
  FROM calls_5m
  WHERE bucket >= toDateTime(@hour_s, 'UTC') AND bucket < toDateTime(@hour_s + 3600, 'UTC')
  GROUP BY tenant, server, tool, bucket
  UNION ALL
  SELECT
    tenant,
    server,
    tool,
    toDateTime(intDiv(t, 300) * 300, 'UTC') AS bucket,
    toUInt64(0),
    toUInt64(0),
    toUInt64(0),
    toUInt64(0),
    toUInt64(count()),
    toUInt64(countIf(latest = 'INVALID_ARGUMENT'))
  FROM (
    SELECT
      tenant,
      server,
      tool,
      any(toUInt32(ts)) AS t,
      argMax(CAST(category AS String), ingested_ms) AS latest
    FROM calls
    WHERE ts >= toDateTime(@hour_s, 'UTC') AND ts < toDateTime(@hour_s + 3600, 'UTC')
    GROUP BY tenant, server, tool, session_key, ts_ms, call_id
  )
  GROUP BY tenant, server, tool, bucket
)
GROUP BY tenant, server, tool, bucket
