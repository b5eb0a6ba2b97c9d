-- Complete UTC hours' session keys, folded (compact.RollupHours, with the
-- hour's other folds): one row per tenant, server and session key that has
-- calls in the hour, with the tools it called (sorted, each once) and its
-- rows (calls; a re-ingested call's copies share its session key, tool and
-- hour, and count each). The overview counts the distinct session keys of
-- a range (queries/overview.sql): a count of distinct keys does not add up
-- over hours, but the keys do, and an hour holds each session's key once
-- instead of once per call. Over 7 days of 10M calls the distinct keys of
-- the raw calls took 18.16 0.38 s of the overview's 0.56 s and 26.7 0.24 s
-- of 0.44 s (BENCHMARKS.md, fifty-fifth round); from this fold 0.15 s and
-- 0.08 s, where one row per tool and session took 0.20 s and 0.14 s
-- (fifty-sixth round). A call without a session id or a trace id has a
-- key of its own (docs/analytics.md, Session key): such calls take a row
-- each here, as many as the raw calls hold keys, and gain nothing. Each
-- fold also writes one row with calls 0, the mark that it has these rows
-- (a real row counts at least one call): an hour whose current fold was
-- made before this table existed has none, readers take its raw calls,
-- and RollupHours folds it again. Readers take an hour's rows from its
-- current fold (calls_5m_current_folds) and bound hour, first in the sort
-- key. Kept as long as the raw calls.
CREATE TABLE IF NOT EXISTS sessions_folded (
  hour DateTime('UTC'),
  fold UInt64,
  tenant LowCardinality(String),
  server LowCardinality(String),
  session_key String,
  tools Array(String),
  calls UInt64
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(hour)
ORDER BY (hour, fold, tenant, server, session_key)
