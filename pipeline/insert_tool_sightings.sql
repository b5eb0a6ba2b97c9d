-- Inserts ToolSighting rows; the column order is ToolSighting.Values (pipeline/tooldefs_write.go).
INSERT INTO tool_sightings (ts, ts_ms, tenant, server, tool, definition_hash, ingested_ms)
