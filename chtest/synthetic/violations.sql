-- Schema validation rows for the scale benchmarks (call_violations), run
-- after replays.sql and definitions.sql, one set per stored call row (a
-- re-ingested call writes its rows again, as ingest does), checked against
-- the version in force at the call's time (sightings.sql). Every call of a
-- tool the server has is validated (calls.sql sets args_validated; not on the
-- UNKNOWN_TOOL calls): the calls refused with -32602 sent a "limit" out of
-- range; 2 % of the others sent a "department" outside the enum, which the
-- server accepted; the others passed, and have no row here
-- (schema/024_calls_args_validated.sql). 2 % of the calls answered without a
-- JSON-RPC error also left out a required property of their structured
-- result.
INSERT INTO call_violations (ts, ts_ms, tenant, server, tool, call_id, definition_hash,
  side, path, reason, detail, suggestion, category, is_failure, ingested_ms)
SELECT
  ts, ts_ms, tenant, server, tool, call_id,
  if(cityHash64(toString(server), toString(tool)) % 4 = 0 AND ts_ms >= @start_ms + intDiv(@span_ms, 2),
    cityHash64(toString(server), toString(tool), 2), cityHash64(toString(server), toString(tool))),
  v.1, v.2, v.3, v.4, v.5, category, is_failure, ingested_ms
FROM calls
ARRAY JOIN arrayFilter(x -> x.1 != '', [
  multiIf(rpc_code = -32602, ('arguments', 'limit', 'out_of_range', 'maximum 50', ''),
          intDiv(call_id, 7) % 100 < 2, ('arguments', 'department', 'not_in_enum', 'one of d0, d1, d2, d3, d4, d5, d6, d7', 'd1'),
          ('', '', '', '', '')),
  if(rpc_code = 0 AND intDiv(call_id, 11) % 100 < 2, ('result', 'amount_due', 'missing_required', 'required property', ''),
     ('', '', '', '', ''))]) AS v
WHERE args_validated = 1
