-- Complete UTC hours' INVALID_ARGUMENT calls folded per argument
-- (compact.RollupHours, with the hour's calls): per tenant, server, tool,
-- session key and top-level argument key=value pair, the calls whose latest
-- ingest is INVALID_ARGUMENT and sent that pair, exactly what the Top
-- offending argument keys and values panel counts in the raw calls. The
-- session key is kept so that the panel's distinct sessions stay exact over
-- several hours. Reading the raw calls, the panel found the day's few
-- thousand INVALID_ARGUMENT calls in 28 ms but then read every argument
-- array of the range again, since those calls lie in every granule: 0.2-0.3
-- s for 24 hours of 10M calls on 18.16 (BENCHMARKS.md, twenty-eighth
-- round). Each fold also writes one row with calls 0, the mark that it has
-- these rows (a real row counts at least one call): an hour whose current
-- fold was made before this table existed has none, readers take its raw
-- calls, and RollupHours folds it again. Readers take an hour's rows from
-- its current fold (calls_5m_current_folds) and bound hour, first in the
-- sort key. Kept as long as the raw calls.
CREATE TABLE IF NOT EXISTS invalid_args_folded (
  hour DateTime('UTC'),
  fold UInt64,
  tenant LowCardinality(String),
  server LowCardinality(String),
  tool LowCardinality(String),
  session_key String,
  arg_key String,
  arg_value String,
  calls UInt64
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(hour)
ORDER BY (hour, fold, tenant, server, tool, arg_key, arg_value, session_key)
