package queries

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// recallsForms are recalls.sql's four forms (clientForms).
var recallsForms = newClientForms("recalls.sql")

// Recall counts the failed calls of one tool and category, and the unchanged
// re-calls among them (docs/analytics.md, "Unchanged re-calls").
type Recall struct {
	// Tenant and Server name the row's pair with Filter.ByPair, else "";
	// Client names its client with Filter.ByClient, else "".
	Tenant   string `ch:"-" json:"-"`
	Server   string `ch:"-" json:"-"`
	Client   string `ch:"-" json:"-"`
	Tool     string `ch:"tool" json:"tool"`
	Category string `ch:"category" json:"category"`
	Failures uint64 `ch:"failures" json:"failures"`
	// WithNextCall counts the failures whose next call of the same tool in
	// the same session key came within the retry window.
	WithNextCall uint64 `ch:"with_next_call" json:"with_next_call"`
	// Unchanged counts the failures whose next call (within the window) had
	// the same args_hash.
	Unchanged uint64 `ch:"unchanged" json:"unchanged"`
	// WithRetryAfter counts the failures that carried the server's
	// retry-after hint (retry_after_ms > 0).
	WithRetryAfter uint64 `ch:"with_retry_after" json:"with_retry_after"`
	// BeforeRetryAfter counts those of them whose next call (within the
	// window) came before the hint had passed: the client did not wait as
	// the server asked.
	BeforeRetryAfter uint64 `ch:"before_retry_after" json:"before_retry_after"`
	// Rate is Unchanged / Failures.
	Rate float64 `ch:"-" json:"rate"`
}

// Recalls returns, per tool and category, the failed calls in [f.From,
// f.To) and how many of them were followed, within window, by a call of the
// same tool in the same session key with identical arguments. Rows are
// ordered by tool and category (with f.ByClient, per client too, or with
// f.ByPair, per tenant and server too, ordered by them first). With the
// default window the failures of the hours the retention job has folded
// come from their fold (foldedChainArgs), the others from the raw calls.
func Recalls(ctx context.Context, db DB, f Filter, window time.Duration) ([]Recall, error) {
	args, folded, err := foldedChainArgs(ctx, db, f, window, 0, 1)
	if err != nil {
		return nil, fmt.Errorf("recalls: %w", err)
	}
	query := recallsForms.statement(folded, f.ByClient)
	var rows []Recall
	if err := db.Select(ctx, &rows, query, args...); err != nil {
		return nil, fmt.Errorf("recalls: %w", err)
	}
	for i := range rows {
		r := &rows[i]
		if r.Tenant, r.Server, r.Client, r.Tool, err = splitRowKey(f, r.Tool); err != nil {
			return nil, fmt.Errorf("recalls: %w", err)
		}
		r.Rate = ratio(float64(r.Unchanged), float64(r.Failures))
	}
	if f.ByClient || f.ByPair {
		// The key sorts by its lengths first; rows by client (or pair),
		// then tool and category. A row names a client or a pair, never
		// both.
		slices.SortStableFunc(rows, func(a, b Recall) int {
			return cmp.Or(cmp.Compare(a.Client, b.Client), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Server, b.Server),
				cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Category, b.Category))
		})
	}
	return rows, nil
}
