-- The stored definition of each tool version (tool_definitions, one row per
-- (tenant, server, tool, definition hash) under FINAL): title, description,
-- schemas as canonical JSON ('' when absent) and the annotation hints (-1
-- when the definition leaves them out).
SELECT
  toString(tenant) AS tenant_,
  toString(server) AS server_,
  toString(tool) AS tool_,
  definition_hash AS hash_,
  title AS title_,
  description AS description_,
  input_schema AS input_,
  output_schema AS output_,
  read_only_hint AS read_only_,
  destructive_hint AS destructive_,
  idempotent_hint AS idempotent_,
  open_world_hint AS open_world_
FROM tool_definitions FINAL
WHERE (@tenant = '' OR tenant = @tenant)
  AND (@all_tenants = 1 OR has(@tenants, tenant))
  AND (@server = '' OR server = @server)
  AND (@tool = '' OR tool = @tool)
