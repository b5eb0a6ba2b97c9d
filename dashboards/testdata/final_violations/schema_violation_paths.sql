-- The panel's SQL as it was with call_violations FINAL: the definition
-- TestSchemaPanelsMatchTheirFinalForms compares the panel with.
-- Schema violations by path (docs/schemas.md): per tool, side (arguments or
-- result), path, reason and suggested value, the calls whose arguments or
-- structured result failed the tool's schema; of them, those the server
-- refused as INVALID_ARGUMENT and those it answered without failing
-- (accepted bad input); and the share of the tool's validated calls. The
-- second branch of the union counts validated calls per tool (the rows with
-- side arguments), carried to every path of the tool through the array.
SELECT
  tool_name,
  v.1 AS side_name,
  v.2 AS path_name,
  v.3 AS reason_name,
  v.4 AS suggested,
  v.5 AS violating_calls,
  v.6 AS refused_calls,
  v.7 AS accepted_calls,
  v.5 / validated_n AS violation_share
FROM (
  SELECT
    tool_name,
    max(validated) AS validated_n,
    groupArray((side_, path_, reason_, suggestion_, calls_n, invalid_n, accepted_n)) AS vs
  FROM (
    SELECT
      CAST(tool AS String) AS tool_name,
      CAST(side AS String) AS side_,
      path AS path_,
      CAST(reason AS String) AS reason_,
      suggestion AS suggestion_,
      uniqExact(call_id) AS calls_n,
      uniqExactIf(call_id, category = 'INVALID_ARGUMENT') AS invalid_n,
      uniqExactIf(call_id, is_failure = 0) AS accepted_n,
      toUInt64(0) AS validated
    FROM call_violations FINAL
    WHERE $__timeFilter(ts)
      AND reason != ''
      AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
      AND $__conditionalAll(server IN (${server:singlequote}), $server)
      AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
    GROUP BY tool_name, side_, path_, reason_, suggestion_
    UNION ALL
    SELECT
      tool_name,
      '' AS side_,
      '' AS path_,
      '' AS reason_,
      '' AS suggestion_,
      toUInt64(0) AS calls_n,
      toUInt64(0) AS invalid_n,
      toUInt64(0) AS accepted_n,
      uniqExact(call_id) AS validated
    FROM (
      SELECT CAST(tool AS String) AS tool_name, call_id
      FROM call_violations FINAL
      WHERE $__timeFilter(ts)
        AND side = 'arguments'
        AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
        AND $__conditionalAll(server IN (${server:singlequote}), $server)
        AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
      UNION ALL
      SELECT CAST(tool AS String) AS tool_name, call_id
      FROM calls
      WHERE $__timeFilter(ts)
        AND args_validated = 1
        AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
        AND $__conditionalAll(server IN (${server:singlequote}), $server)
        AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
    )
    GROUP BY tool_name
  )
  GROUP BY tool_name
)
ARRAY JOIN vs AS v
WHERE v.3 != ''
ORDER BY violating_calls DESC, tool_name, side_name, path_name, reason_name, suggested
LIMIT 50
