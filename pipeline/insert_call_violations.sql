-- Inserts Violation rows; the column order is Violation.Values (pipeline/validate.go).
INSERT INTO call_violations (ts, ts_ms, tenant, server, tool, call_id, definition_hash, side, path, reason,
  detail, suggestion, category, is_failure, ingested_ms)
