-- The stored tool definitions that ingest loads into its catalog at start
-- and on every refresh (pipeline/tooldefs_catalog.go): the schemas of every
-- version, to validate calls against. The aliases differ from the column
-- names (portable SQL rule).
SELECT
  toString(tenant) AS tenant_,
  toString(server) AS server_,
  toString(tool) AS tool_,
  definition_hash AS hash_,
  input_schema AS input_,
  output_schema AS output_
FROM tool_definitions FINAL
