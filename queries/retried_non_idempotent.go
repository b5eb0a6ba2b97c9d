package queries

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

var retriedNonIdempotentSQL = mustSQL("retried_non_idempotent.sql")

// KindRetriedNonIdempotent marks retry chains after an ambiguous failure
// (UPSTREAM_TIMEOUT or UNAVAILABLE, no answer included) of a tool whose
// definition declares neither idempotentHint nor readOnlyHint: each retry
// may have repeated the tool's effect (a second refund, a duplicate
// ticket).
const KindRetriedNonIdempotent = "retried_non_idempotent"

// retriedNonIdempotent returns the retried_non_idempotent rows: the tools'
// hints come from the definition in force at f.To (ToolVersions); tools
// without a known definition are left out, since their hints are unknown.
func retriedNonIdempotent(ctx context.Context, db DB, f Filter, window time.Duration, minChains int64) ([]Misclassification, error) {
	versions, err := ToolVersions(ctx, db, f)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, v := range versions {
		if v.Current && !v.Idempotent() {
			keys = append(keys, v.Tenant+"\n"+v.Server+"\n"+v.Tool)
		}
	}
	if len(keys) == 0 {
		return nil, nil // 18.16 cannot type has() over an empty array
	}
	args, err := chainArgs(f, window, 1, ChainHorizon)
	if err != nil {
		return nil, fmt.Errorf("retried non-idempotent: %w", err)
	}
	args = append(args, clickhouse.Named("keys", keys), clickhouse.Named("min_chains", max(minChains, 1)))
	var rows []Misclassification
	if err := db.Select(ctx, &rows, retriedNonIdempotentSQL, args...); err != nil {
		return nil, fmt.Errorf("retried non-idempotent: %w", err)
	}
	for i := range rows {
		r := &rows[i]
		r.Kind = KindRetriedNonIdempotent
		retries := r.Calls - r.Chains
		r.Evidence = fmt.Sprintf("%d %s retried after a timeout or no answer (%d %s), %d recovered; the tool declares neither idempotentHint nor readOnlyHint, so a retry may repeat its effect",
			r.Chains, plural(r.Chains, "chain", "chains"), retries, plural(retries, "retry", "retries"), r.Recovered)
	}
	return rows, nil
}
