-- Schema validation of each call whose tool had a definition in force at the
-- call's time (pipeline/validate.go): one row per argument or result path
-- that failed, with reason one of missing_required, wrong_type, not_in_enum,
-- out_of_range, bad_length, pattern_mismatch, bad_format,
-- additional_property, no_match, missing_structured_content, other; and for a
-- call whose arguments passed, one row with side 'arguments', path '' and
-- reason '', so that the number of validated calls is countable here (the
-- denominator of a violation's share). category and is_failure are the
-- call's classification, so that "the server accepted bad input" needs no
-- join with calls. Keyed like calls, by call identity: a re-ingested call
-- collapses under FINAL. Values the model sent are never stored here: detail
-- names only what the schema allows, and suggestion is an allowed value.
CREATE TABLE IF NOT EXISTS call_violations (
  ts DateTime('UTC'),
  ts_ms Int64,
  tenant LowCardinality(String),
  server LowCardinality(String),
  tool LowCardinality(String),
  call_id UInt64,
  definition_hash UInt64,
  side LowCardinality(String),
  path String,
  reason LowCardinality(String),
  detail String,
  suggestion String,
  category LowCardinality(String),
  is_failure UInt8,
  ingested_ms Int64
) ENGINE = ReplacingMergeTree(ingested_ms)
PARTITION BY toYYYYMMDD(ts)
ORDER BY (tenant, server, tool, ts_ms, call_id, side, path, reason)
