-- Misclassified retryables (docs/analytics.md), the misflagged rows: per
-- tool and category, the calls whose isError flag contradicts their
-- category, as queries/misflagged.sql computes them for the API. A row needs
-- min_chains misflagged calls; evidence_share is the misflagged share of the
-- tool and category's calls. The chain kinds are the panel's other query,
-- misclassifications.sql, with the same columns; the plugin runs the two at
-- the same time and the panel merges their rows (see that file).
-- The misflagged rows come from the 5-minute rollups (docs/dashboards.md),
-- each call counted once: distinct call ids merged per tool and category
-- over the range; the misflagged calls from calls_5m_classes, which holds
-- failed and misflagged calls only, the calls of each tool and category
-- that has misflagged calls in the range from calls_5m (min_chains is at
-- least 2, so no other can make a row). Merged per 5-minute bucket as well,
-- with every tool and category's calls, this half took 1.0-1.4 s with
-- 1,820 tool names over 24 h of 10M calls on 18.16 (BENCHMARKS.md,
-- twenty-sixth round). Their calls are added up, for the hours that lie
-- whole in the range and whose current fold holds the calls per category
-- (compact.RollupHours, schema/029_calls_categories_folded.sql; its mark,
-- calls 0), from that fold, and merged from the states for the other hours
-- (BENCHMARKS.md, thirty-second round: over 7 days of 10M calls 1.3 s ->
-- 0.6 s on 18.16, 0.86 s -> 0.54 s on 26.7). The misflagged calls, a few
-- percent of the rollup's rows, are still merged from the states of the
-- whole range, and so are the pairs that have them: split by the fold's
-- hours as well, these lookups cost 26.7 more than they saved.
SELECT
  kind_ AS kind,
  tool_m AS tool_name,
  category_m AS category_name,
  chains_n,
  calls_m AS calls_n,
  recovered_n,
  total_n,
  calls_m / greatest(total_n, 1) AS evidence_share
FROM (
  SELECT
    'misflagged' AS kind_,
    tool_m,
    category_m,
    toUInt64(0) AS chains_n,
    sum(mf) AS calls_m,
    toUInt64(0) AS recovered_n,
    sum(n) AS total_n
  FROM (
    SELECT
      CAST(tool AS String) AS tool_m,
      CAST(category AS String) AS category_m,
      uniqExactMerge(calls) AS mf,
      toUInt64(0) AS n
    FROM calls_5m_classes
    WHERE $__timeFilter(bucket)
      AND misflagged = 1
      AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
      AND $__conditionalAll(server IN (${server:singlequote}), $server)
      AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
    GROUP BY tool_m, category_m
    UNION ALL
    SELECT
      CAST(tool AS String) AS tool_m,
      CAST(category AS String) AS category_m,
      toUInt64(0) AS mf,
      uniqExactMerge(calls) AS n
    FROM calls_5m
    PREWHERE toDateTime(intDiv(toUInt32(bucket), 3600) * 3600, 'UTC') GLOBAL NOT IN (SELECT hour FROM calls_categories_folded WHERE calls = 0 AND hour >= $__fromTime AND toUInt32(hour) + 3599 <= toUInt32($__toTime) AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds))
    WHERE $__timeFilter(bucket)
      AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
      AND $__conditionalAll(server IN (${server:singlequote}), $server)
      AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
      AND (tool, category) GLOBAL IN (
        SELECT tool, category
        FROM calls_5m_classes
        WHERE $__timeFilter(bucket)
          AND misflagged = 1
          AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
          AND $__conditionalAll(server IN (${server:singlequote}), $server)
          AND $__conditionalAll(tool IN (${tool:singlequote}), $tool))
    GROUP BY tool_m, category_m
    UNION ALL
    SELECT
      CAST(tool AS String) AS tool_m,
      CAST(category AS String) AS category_m,
      toUInt64(0) AS mf,
      calls AS n
    -- A current fold with rows here has its mark (they are written by one
    -- statement before the fold is recorded), so the current folds are
    -- enough; looking the marks up as well cost 26.7 8 ms.
    FROM calls_categories_folded
    PREWHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds)
    WHERE hour >= $__fromTime AND toUInt32(hour) + 3599 <= toUInt32($__toTime)
      AND calls > 0
      AND $__conditionalAll(tenant IN (${tenant:singlequote}), $tenant)
      AND $__conditionalAll(server IN (${server:singlequote}), $server)
      AND $__conditionalAll(tool IN (${tool:singlequote}), $tool)
  )
  GROUP BY tool_m, category_m
  HAVING calls_m >= ${min_chains}
)
ORDER BY tool_name, category_name
