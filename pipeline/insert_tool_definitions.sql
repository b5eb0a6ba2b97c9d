-- Inserts ToolDef rows; the column order is ToolDef.Values (pipeline/tooldefs.go).
INSERT INTO tool_definitions (tenant, server, tool, definition_hash, title, description, input_schema,
  output_schema, read_only_hint, destructive_hint, idempotent_hint, open_world_hint, definition, seen_ms,
  ingested_ms)
