-- Tool definitions for the scale benchmarks, run after calls.sql: one
-- version of every (tenant, server, tool) the calls name, announced at the
-- start of the span, as a server's tools/list would be captured. About half
-- of the tools declare readOnlyHint true; the others declare no hints, so
-- that the misclassifications endpoint counts their retries after a timeout
-- or no answer (retried_non_idempotent), as it does for a fleet whose
-- definitions are captured.
INSERT INTO tool_definitions (tenant, server, tool, definition_hash, title, description,
  input_schema, output_schema, read_only_hint, destructive_hint, idempotent_hint,
  open_world_hint, definition, seen_ms, ingested_ms)
SELECT
  tenant, server, tool, cityHash64(tenant, server, tool), toString(tool), '', '', '',
  toInt8(if(cityHash64(toString(tool)) % 2 = 0, 1, -1)), toInt8(-1), toInt8(-1), toInt8(-1),
  concat('{"name":"', toString(tool), '"}'), @start_ms, toInt64(1)
FROM (SELECT DISTINCT tenant, server, tool FROM calls)
