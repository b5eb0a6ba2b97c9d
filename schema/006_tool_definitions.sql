-- One row per version of one tool's definition, as a server announced it in a
-- tools/list result (or as POST /v1/tools and `ingest tools` received it):
-- per (tenant, server, tool) a version is identified by definition_hash, the
-- xxHash64 of the canonical JSON of the whole Tool object without _meta
-- (pipeline/tooldefs.go). Writers insert a version when they first see it;
-- ReplacingMergeTree keyed by (tenant, server, tool, definition_hash) keeps one
-- copy, and readers use FINAL. When a version was seen lives in
-- tool_sightings. Hints are -1 when the definition leaves them out (the
-- protocol defaults then apply: readOnlyHint false, destructiveHint true,
-- idempotentHint false, openWorldHint true). Schemas are canonical JSON text,
-- '' when absent.
CREATE TABLE IF NOT EXISTS tool_definitions (
  tenant LowCardinality(String),
  server LowCardinality(String),
  tool LowCardinality(String),
  definition_hash UInt64,
  title String,
  description String,
  input_schema String,
  output_schema String,
  read_only_hint Int8,
  destructive_hint Int8,
  idempotent_hint Int8,
  open_world_hint Int8,
  definition String,
  seen_ms Int64,
  ingested_ms Int64
) ENGINE = ReplacingMergeTree(ingested_ms)
ORDER BY (tenant, server, tool, definition_hash)
