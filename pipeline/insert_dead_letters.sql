-- Inserts rejected input; the column order is the Append call in write.go.
INSERT INTO dead_letters (received, received_ms, tenant, source, line, reason, payload)
