package queries

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

var (
	// misclassificationsForms are misclassifications.sql's two forms
	// (foldForms).
	misclassificationsForms = newFoldForms("misclassifications.sql", mustSQL("misclassifications.sql"))
	misflaggedSQL           = mustSQL("misflagged.sql")
	flagsFoldHoursSQL       = mustSQL("flags_fold_hours.sql")
)

// The kinds of Misclassification (docs/analytics.md, "Misclassified
// retryables").
const (
	// KindRetryableNeverRecovers marks chains declared or expected retryable
	// that were retried, fewer than 10 % of them recovering.
	KindRetryableNeverRecovers = "retryable_never_recovers"
	// KindNonRetryableRecovers marks chains declared or expected not
	// retryable that were retried with the same arguments, at least 50 % of
	// them recovering: the failure should have been retryable.
	KindNonRetryableRecovers = "non_retryable_recovers"
	// KindRetriedNonRetryable marks chains expected not retryable that were
	// retried with the same arguments anyway: wasted retries.
	KindRetriedNonRetryable = "retried_non_retryable"
	// KindRetriedNonIdempotent marks retry chains after an ambiguous
	// failure (UPSTREAM_TIMEOUT or UNAVAILABLE, no answer included) of a
	// tool whose definition declares neither idempotentHint nor
	// readOnlyHint: each retry may have repeated the tool's effect (a second
	// refund, a duplicate ticket).
	KindRetriedNonIdempotent = "retried_non_idempotent"
	// KindMisflagged marks calls whose isError contradicts their category.
	KindMisflagged = "misflagged"
)

// sightingLookback is how far before the end of the range misclassifications
// first looks for each tool's latest sighting, the version in force; only
// the tools not sighted in it are looked for in the older history. Ingest
// sights every listed tool at least hourly by default, so most are found
// there. The answer does not depend on it, only the time.
const sightingLookback = 48 * time.Hour

// DefaultMinChains is the smallest population a Misclassification is
// reported for, unless a request asks for another.
const DefaultMinChains = 5

// Misclassification is one (tool, category) whose retry behaviour or isError
// flags contradict its classification.
type Misclassification struct {
	Kind string `ch:"kind" json:"kind"`
	// Tenant and Server name the row's pair with Filter.ByPair, else "".
	Tenant   string `ch:"-" json:"-"`
	Server   string `ch:"-" json:"-"`
	Tool     string `ch:"tool" json:"tool"`
	Category string `ch:"category" json:"category"`
	// Chains is the population of retry chains the row is about; 0 for
	// misflagged rows, which are about calls.
	Chains uint64 `ch:"chains" json:"chains"`
	// Calls is the number of calls in those chains (first calls and
	// retries), or for misflagged rows the misflagged calls.
	Calls    uint64 `ch:"calls" json:"calls"`
	Evidence string `ch:"-" json:"evidence"`
	// Recovered counts the chains of the population that ended with a
	// success; 0 for misflagged rows.
	Recovered uint64 `ch:"recovered" json:"-"`
	// Total is the denominator of the evidence: Chains, or for misflagged
	// rows every call of the tool and category in the range.
	Total uint64 `ch:"total" json:"-"`
}

// Misclassifications returns, per kind, tool and category, the
// classifications contradicted by the retry chains started in [f.From,
// f.To) (window is the retry window) and by the misflagged calls in the
// range, when the population holds at least minChains chains (misflagged:
// calls). Rows are ordered by kind, tool and category (with f.ByPair, per
// tenant and server too, ordered by kind, tenant, server, tool and
// category). For
// retried_non_idempotent the tools' hints come from the definition in force
// at f.To (as in ToolVersions); tools without a known definition are left
// out, since their hints are unknown. With FoldedChainWindow the chains of
// the hours the retention job has folded come from their fold (one query for
// the bound first; with no hour of the range folded, the statement without
// the fold's branch).
//
// The chain kinds and the misflagged kind are two queries (each after the
// query for its fold's bound, when it needs one), run at the same time on
// db (which must be safe for concurrent use, as driver.Conn is); each reads
// the data as it is when it starts, so rows added in between may
// count in one kind and not yet in the other. An error of either is
// returned, and cancels the other.
func Misclassifications(ctx context.Context, db DB, f Filter, window time.Duration, minChains int64) ([]Misclassification, error) {
	if _, err := chainWindow(f, window); err != nil {
		return nil, fmt.Errorf("misclassifications: %w", err)
	}
	sighted := f.To.Add(-sightingLookback).UnixMilli()
	more := []any{clickhouse.Named("min_chains", max(minChains, 1)),
		clickhouse.Named("sighted_ms", sighted), clickhouse.Named("sighted_s", floorDiv(sighted, 1000))}
	// The first error cancels the other query and is the one returned.
	var rows, flagged []Misclassification
	err := together(ctx,
		func(ctx context.Context) error {
			args, folded, err := foldedChainArgs(ctx, db, f, window, 1, ChainHorizon)
			if err != nil {
				return err
			}
			return db.Select(ctx, &rows, misclassificationsForms.statement(folded), append(args, more...)...)
		},
		func(ctx context.Context) error {
			args, _, err := boundArgs(ctx, db, f, flagsFoldHoursSQL)
			if err != nil {
				return fmt.Errorf("misflagged: %w", err)
			}
			if err := db.Select(ctx, &flagged, misflaggedSQL, append(args, more...)...); err != nil {
				return fmt.Errorf("misflagged: %w", err)
			}
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("misclassifications: %w", err)
	}
	rows = append(rows, flagged...)
	if f.ByPair {
		for i := range rows {
			var err error
			if rows[i].Tenant, rows[i].Server, rows[i].Tool, err = splitPairKey(rows[i].Tool); err != nil {
				return nil, fmt.Errorf("misclassifications: %w", err)
			}
		}
	}
	slices.SortFunc(rows, func(a, b Misclassification) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Server, b.Server),
			cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Category, b.Category))
	})
	for i := range rows {
		rows[i].Evidence = rows[i].evidence()
	}
	return rows, nil
}

// evidence states the counts behind a row in one short sentence.
func (m Misclassification) evidence() string {
	switch m.Kind {
	case KindRetryableNeverRecovers:
		return fmt.Sprintf("%d of %d retried chains recovered (%d%%)", m.Recovered, m.Chains, percent(m.Recovered, m.Chains))
	case KindNonRetryableRecovers:
		return fmt.Sprintf("%d of %d same-argument retried chains recovered (%d%%)", m.Recovered, m.Chains, percent(m.Recovered, m.Chains))
	case KindRetriedNonRetryable:
		retries := m.Calls - m.Chains
		return fmt.Sprintf("%d %s retried with unchanged arguments (%d %s), %d recovered",
			m.Chains, plural(m.Chains, "chain", "chains"), retries, plural(retries, "retry", "retries"), m.Recovered)
	case KindRetriedNonIdempotent:
		retries := m.Calls - m.Chains
		return fmt.Sprintf("%d %s retried after a timeout or no answer (%d %s), %d recovered; the tool declares neither idempotentHint nor readOnlyHint, so a retry may repeat its effect",
			m.Chains, plural(m.Chains, "chain", "chains"), retries, plural(retries, "retry", "retries"), m.Recovered)
	case KindMisflagged:
		return fmt.Sprintf("%d of %d calls have an isError flag that contradicts the category (%d%%)", m.Calls, m.Total, percent(m.Calls, m.Total))
	}
	return ""
}

func plural(n uint64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
