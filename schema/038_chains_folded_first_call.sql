-- first_call_id: the call_id of the chain's first call, which /retry-loops
-- answers so that a chain leads to its calls. Skipped when the column
-- exists (schema.Exec).
ALTER TABLE chains_folded ADD COLUMN first_call_id UInt64 DEFAULT 0
