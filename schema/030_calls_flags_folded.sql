-- Complete UTC hours' calls per category and isError flag, folded
-- (compact.RollupHours, with the hour's other folds): per tenant, server,
-- tool and category of each call's latest ingest, the calls and those among
-- them whose latest ingest is misflagged (isError contradicts the
-- category), exactly what the API's misflagged rows count in the raw calls
-- (queries/misflagged.sql). Unlike calls_categories_folded, which the
-- dashboards read, a call re-ingested with another category counts once,
-- under its latest. A call belongs to one hour, so the counts of several
-- hours add up. Reading the raw calls, the misflagged half of
-- /misclassifications counted every call of its range: over 7 days of 10M
-- calls 1.6-2.1 s on 18.16 and 1.0 s on 26.7, the endpoint's time once its
-- chains came from their fold; with this fold and its bound 0.53 s and
-- 0.24 s (BENCHMARKS.md, thirty-sixth round). Each
-- fold also writes one row with calls 0, the mark that it has these rows (a
-- real row counts at least one call): an hour whose current fold was made
-- before this table existed has none, readers take its raw calls, and
-- RollupHours folds it again. Readers take an hour's rows from its current
-- fold (calls_5m_current_folds) and bound hour, first in the sort key. Kept
-- as long as the raw calls.
CREATE TABLE IF NOT EXISTS calls_flags_folded (
  hour DateTime('UTC'),
  fold UInt64,
  tenant LowCardinality(String),
  server LowCardinality(String),
  tool LowCardinality(String),
  category LowCardinality(String),
  calls UInt64,
  misflagged UInt64
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(hour)
ORDER BY (hour, fold, tenant, server, tool, category)
