-- Complete UTC hours' calls per category (compact.RollupHours, with the
-- hour's other folds): per tenant, server, tool and category, the distinct
-- call ids of the hour in calls_5m, exactly what uniqExactMerge of the
-- hour's states answers. A call id belongs to one bucket, so the counts of
-- several hours add up. Misclassified retryables adds up the calls of the
-- hours that lie whole in its range for its misflagged rows' totals instead
-- of merging the states of every (tool, category) cell: the misflagged half
-- 0.12 s -> 0.07 s over 24 hours of 10M calls and 1,820 tool names on
-- 18.16, the panel over 7 days 1.3 s -> 0.6 s (BENCHMARKS.md, thirty-second
-- round). Each fold also writes one row with calls 0, the mark that it has
-- these rows (a real row counts at least one call): an hour whose current
-- fold was made before this table existed has none, readers merge its
-- states, and RollupHours folds it again. Readers take an hour's rows from
-- its current fold (calls_5m_current_folds) and bound hour, first in the
-- sort key. Kept as long as the rollups.
CREATE TABLE IF NOT EXISTS calls_categories_folded (
  hour DateTime('UTC'),
  fold UInt64,
  tenant LowCardinality(String),
  server LowCardinality(String),
  tool LowCardinality(String),
  category LowCardinality(String),
  calls UInt64
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(hour)
ORDER BY (hour, fold, tenant, server, tool, category)
