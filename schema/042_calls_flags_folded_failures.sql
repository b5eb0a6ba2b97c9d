-- failures: per row of calls_flags_folded (schema/030), the calls whose
-- latest ingest failed (is_failure), so that the overview adds up a folded
-- hour's calls, failures, empty results and misflagged calls instead of
-- counting and deduplicating every raw call of it (queries/overview.sql).
-- The fold's mark (calls 0) carries failures 1 since this migration: a
-- mark with failures 0 is a fold made before, whose rows count no
-- failures. compact.RollupHours folds such an hour again
-- (compact/rollup_folds.sql), and the overview reads it from the raw calls
-- until then. Skipped when the column exists (schema.Exec).
ALTER TABLE calls_flags_folded ADD COLUMN failures UInt64 DEFAULT 0
