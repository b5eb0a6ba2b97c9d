-- Alert MCPToolFaultRate: per tenant, server and tool, the share of the calls
-- in the rule's range (the last 15 minutes) that failed with a fault on the
-- server's side: RATE_LIMITED, UPSTREAM_TIMEOUT, UNAVAILABLE or INTERNAL, the
-- categories whose expected retryability the taxonomy sets to yes
-- (classify.Category.ExpectedRetryable: transient faults, and server bugs,
-- retryable in a limited way and worth an alert). The callers' own mistakes
-- (INVALID_ARGUMENT, UNKNOWN_TOOL, NOT_FOUND, UNAUTHENTICATED, ...) and empty
-- results have rules of their own. Only tools with at least 20 calls in the
-- range and at least one such fault are returned; the threshold (5 %) is the
-- rule's.
-- A re-ingested call counts once, as its latest ingest, without FINAL: every
-- row of the range counts, and the copies that a later ingest of the same
-- call replaced are subtracted, found among the calls with more than one
-- row (as invalid_argument_spike.sql's last hour). The category is compared
-- as a String: on ClickHouse 18.16 an IN over the LowCardinality column is a
-- LowCardinality(UInt8) that a Distributed table's shards cannot merge into
-- countIf's state (TestPanelsOnCluster).
SELECT
  tenant_name,
  server_name,
  tool_name,
  faults_n / calls_n AS fault_share
FROM (
  SELECT
    tenant_name,
    server_name,
    tool_name,
    sum(c_) AS calls_n,
    sum(f_) AS faults_n
  FROM (
    SELECT
      toString(tenant) AS tenant_name,
      toString(server) AS server_name,
      toString(tool) AS tool_name,
      toInt64(count()) AS c_,
      toInt64(countIf(CAST(category AS String) IN ('RATE_LIMITED', 'UPSTREAM_TIMEOUT', 'UNAVAILABLE', 'INTERNAL'))) AS f_
    FROM calls
    WHERE $__timeFilter(ts)
    GROUP BY tenant_name, server_name, tool_name
    UNION ALL
    SELECT tenant_name, server_name, tool_name, -toInt64(1), -toInt64(s IN ('RATE_LIMITED', 'UPSTREAM_TIMEOUT', 'UNAVAILABLE', 'INTERNAL'))
    FROM (
      SELECT
        toString(tenant) AS tenant_name,
        toString(server) AS server_name,
        toString(tool) AS tool_name,
        arrayPopFront(arrayMap(x -> x.2, arraySort(x -> -x.1, groupArray((ingested_ms, CAST(category AS String)))))) AS stale
      FROM calls
      WHERE $__timeFilter(ts)
        AND call_id GLOBAL IN (
          SELECT call_id
          FROM calls
          WHERE $__timeFilter(ts)
          GROUP BY call_id
          HAVING count() > 1)
      GROUP BY tenant, server, tool, session_key, ts_ms, call_id
    )
    ARRAY JOIN stale AS s
  )
  GROUP BY tenant_name, server_name, tool_name
)
WHERE calls_n >= 20 AND faults_n > 0
ORDER BY tenant_name, server_name, tool_name
