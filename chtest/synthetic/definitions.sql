-- Tool definitions for the scale benchmarks, run after calls.sql: a version
-- of every (tenant, server, tool) the validated calls name (not the names of
-- the UNKNOWN_TOOL calls), announced at the start of the span, as a server's
-- tools/list would be captured, and for a quarter of the (server, tool)s a
-- second version (another description, the same hints), a release every
-- tenant runs from half-way through the span (sightings.sql). A version's
-- hash is that of its server and tool: every tenant runs the same
-- definitions. About half of the tools declare readOnlyHint true; the others
-- declare no hints, so that the misclassifications endpoint counts their
-- retries after a timeout or no answer (retried_non_idempotent), as it does
-- for a fleet whose definitions are captured.
INSERT INTO tool_definitions (tenant, server, tool, definition_hash, title, description,
  input_schema, output_schema, read_only_hint, destructive_hint, idempotent_hint,
  open_world_hint, definition, seen_ms, ingested_ms)
SELECT
  tenant, server, tool, if(v = 1, cityHash64(toString(server), toString(tool)), cityHash64(toString(server), toString(tool), 2)),
  toString(tool), if(v = 1, '', 'second version'), '', '',
  toInt8(if(cityHash64(toString(tool)) % 2 = 0, 1, -1)), toInt8(-1), toInt8(-1), toInt8(-1),
  concat('{"name":"', toString(tool), '","v":', toString(v), '}'),
  toInt64(@start_ms + (v - 1) * intDiv(@span_ms, 2)), toInt64(1)
FROM (SELECT DISTINCT tenant, server, tool FROM calls WHERE args_validated = 1)
ARRAY JOIN [1, 2] AS v
WHERE v = 1 OR cityHash64(toString(server), toString(tool)) % 4 = 0
