-- The failure-rate question (failure_rates.sql) answered from the 5-minute
-- rollup calls_5m: same columns, same order. Valid when from, to and the step
-- are multiples of 5 minutes; FailureRates chooses it then.
SELECT
  b AS time,
  tool_ AS tool,
  e.1 AS category,
  e.2 AS code,
  calls_ AS calls,
  e.3 AS failures,
  e.3 / calls_ AS rate
FROM (
  SELECT b, tool_, sum(n) AS calls_, groupArray((cat, code_, n, f)) AS g
  FROM (
    SELECT
      toDateTime(@from_s + intDiv(toInt64(toUInt32(bucket)) - @from_s, @step_s) * @step_s, 'UTC') AS b,
      tool AS tool_,
      category AS cat,
      rpc_code AS code_,
      is_failure AS f,
      uniqExactMerge(calls) AS n
    FROM calls_5m
    WHERE bucket >= toDateTime(@from_s, 'UTC') AND bucket < toDateTime(@to_s, 'UTC')
      AND (@tenant = '' OR tenant = @tenant)
      AND (@all_tenants = 1 OR has(@tenants, tenant))
      AND (@server = '' OR server = @server)
      AND (@tool = '' OR tool = @tool)
    GROUP BY b, tool_, cat, code_, f
  )
  GROUP BY b, tool_
)
ARRAY JOIN g AS e
WHERE e.4 = 1
ORDER BY time, tool, category, code
