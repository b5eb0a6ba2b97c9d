-- session_key: the session key of the chain's calls (schema/026_chains_folded.sql),
-- so that /retry-loops and the Retry loops panel name the session of a
-- folded chain. The folds made before have '' and are no longer current
-- (schema/039_chain_folds_sessions.sql). 18.16 has no ADD COLUMN IF NOT
-- EXISTS, so schema.Exec (and Apply) skip this statement when the column
-- exists.
ALTER TABLE chains_folded ADD COLUMN session_key String DEFAULT ''
