-- client: the chain's client, the least clientInfo name of its (tenant,
-- server, session_key, tool) sequence's calls that the fold read (a
-- session has one; recalls_folded takes it the same way), so that
-- /retry-outcomes can answer per client from the fold. Skipped when the
-- column exists (schema.Exec).
ALTER TABLE chains_folded ADD COLUMN client LowCardinality(String) DEFAULT ''
