-- The hours in [@from_hour_s, @to_hour_s) with a current chain fold
-- (schema/034_chain_current_folds.sql), their starts in Unix seconds,
-- ascending. queries.foldedChainArgs reads the chains of the hours from
-- @from_hour_s up to the first one missing here from their fold
-- (compact.RollupChains, schema/026_chains_folded.sql), and the rest from
-- the raw calls. The dashboards' chain_bound variable is the same bound
-- (dashboards/variables/chain_bound.sql). Reads the folds' records only,
-- no tenant's rows.
SELECT DISTINCT toInt64(toUInt32(hour)) AS hour_s
FROM chain_current_folds
WHERE hour >= toDateTime(@from_hour_s, 'UTC') AND hour < toDateTime(@to_hour_s, 'UTC')
ORDER BY hour_s
