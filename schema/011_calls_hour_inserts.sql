-- How many rows each insert into calls brought to each UTC hour, and when
-- the last one came: the fingerprint of an hour of calls and of its
-- calls_5m rollup. Every insert into calls adds to its hour's count here
-- as it adds to calls_5m (calls_hour_inserts_mv), and since migration 021
-- every insert into call_violations too (the fold holds an hour's schema
-- violations as well), and neither a merge nor a repeated call ever
-- lowers it, so an hour whose count is unchanged has the calls, the
-- calls_5m and the violations it had. The fold of complete hours into plain
-- counts (calls_5m_folded, compact.RollupHours) is read only while its
-- hour's count is the one it was made at. Partitioned by month, not day:
-- every reader of a fold looks its hour up here (calls_5m_current_folds,
-- which reads the whole table), and 18.16 pays for each part it opens:
-- with the rollup's 400 days of daily partitions a lookup took 75 ms, with
-- monthly ones 17 ms (BENCHMARKS.md, eighteenth round). The table holds a
-- row an hour, so retention dropping whole months keeps at most a month
-- of those rows too many.
CREATE TABLE IF NOT EXISTS calls_hour_inserts (
  hour DateTime('UTC'),
  rows AggregateFunction(count),
  last AggregateFunction(max, DateTime)
) ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(hour)
ORDER BY hour
