-- Whether the fold @fold of the hour @hour_s holds a chain still retrying
-- at the end of what it read (schema/026_chains_folded.sql).
SELECT toUInt8(count() > 0) AS any_open
FROM chains_folded
WHERE hour = toDateTime(@hour_s, 'UTC') AND fold = @fold AND open = 1
