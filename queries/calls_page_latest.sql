-- One page of GET /api/v1/calls' candidates when the quick form
-- (calls_page.sql, calls_page_args.sql) found calls whose latest ingest
-- does not meet the conditions (reclassified by a later ingest, as after
-- a replay under new rules): then the rows that meet them are mostly
-- earlier ingests, and reading on after each would scan the range again a
-- page at a time. This form takes only each call's latest ingest: a row of
-- a call stored more than once is one when its ingested_ms is the call's
-- latest. The copied calls' latest ingests come, as in empty_results.sql,
-- for the hours whose current fold records them (calls_latest_folded) from
-- the fold, and for the other hours from the raw calls (every call id with
-- more than one row there); a call's copies share its time, so they lie in
-- one hour. CallList runs it over a chunk of the range at a time, back
-- from the cursor (@from and @to are the chunk's): the copies of a chunk's
-- calls lie in the chunk, so its lookup groups the chunk's raw calls only.
-- Every condition, the arguments' too, is in this one form: it runs
-- rarely. The join is GLOBAL: in cluster mode the lookup reads
-- Distributed tables, which each shard may not read again. Grouping only
-- the call ids with a row that meets the conditions halved a rare
-- condition's unfolded day on 18.16 but slowed the folded steady state
-- and every common condition, up to 3x on 26.7 (BENCHMARKS.md,
-- forty-ninth round): not kept.
SELECT
  ts_ms,
  call_id,
  ingested_ms
FROM calls
GLOBAL ANY LEFT JOIN (
  SELECT call_id, latest_ms, copies
  FROM calls_latest_folded
  WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
    AND call_id != 0
    AND (hour, fold) GLOBAL IN (
      SELECT hour, fold
      FROM calls_5m_current_folds
      WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC'))
  UNION ALL
  SELECT
    call_id,
    max(ingested_ms) AS latest_ms,
    toUInt64(count()) AS copies
  FROM calls
  WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
    AND ts_ms >= @from_ms AND ts_ms < @to_ms
    AND (@tenant = '' OR tenant = @tenant)
    AND (@all_tenants = 1 OR has(@tenants, tenant))
    AND (@server = '' OR server = @server)
    AND (@tool = '' OR tool = @tool)
    AND toStartOfHour(ts) GLOBAL NOT IN (
      SELECT hour
      FROM calls_latest_folded
      WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')
        AND call_id = 0
        AND (hour, fold) GLOBAL IN (
          SELECT hour, fold
          FROM calls_5m_current_folds
          WHERE hour >= toStartOfHour(toDateTime(@from_s, 'UTC')) AND hour <= toDateTime(@to_s, 'UTC')))
  GROUP BY call_id
  HAVING count() > 1
) AS copied USING call_id
WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
  AND ts_ms >= @from_ms AND ts_ms < @to_ms
  AND (ts_ms < @before_ms OR ts_ms = @before_ms AND call_id < @before_id)
  AND (@tenant = '' OR tenant = @tenant)
  AND (@all_tenants = 1 OR has(@tenants, tenant))
  AND (@server = '' OR server = @server)
  AND (@tool = '' OR tool = @tool)
  AND (@session = '' OR session_key = @session)
  AND (@trace_id = '' OR trace_id = @trace_id)
  AND (copies = 0 OR ingested_ms = latest_ms)
  AND (@category = '' OR category = @category)
  AND (@failed = -1 OR is_failure = @failed)
  AND (@misflagged = -1 OR misflagged = @misflagged)
  AND (@any_code = 1 OR rpc_code = @code)
  AND (@arg_key = '' OR arrayExists((k, v) -> k = @arg_key AND (@any_value = 1 OR v = @arg_value), arg_keys, arg_values))
ORDER BY ts_ms DESC, call_id DESC, ingested_ms DESC
LIMIT @fetch
