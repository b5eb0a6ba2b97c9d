package queries

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// retryOutcomesForms are retry_outcomes.sql's four forms (clientForms).
var retryOutcomesForms = newClientForms("retry_outcomes.sql")

// RetryOutcome counts the retry chains of one tool whose first call had one
// category and retryability (docs/analytics.md, "Retry chains").
type RetryOutcome struct {
	// Tenant and Server name the row's pair with Filter.ByPair, else "";
	// Client names its client with Filter.ByClient, else "".
	Tenant            string `ch:"-" json:"-"`
	Server            string `ch:"-" json:"-"`
	Client            string `ch:"-" json:"-"`
	Tool              string `ch:"tool" json:"tool"`
	Category          string `ch:"category" json:"category"`
	DeclaredRetryable int8   `ch:"declared_retryable" json:"declared_retryable"`
	ExpectedRetryable int8   `ch:"expected_retryable" json:"expected_retryable"`
	Chains            uint64 `ch:"chains" json:"chains"`
	RetryThenSuccess  uint64 `ch:"retry_then_success" json:"retry_then_success"`
	RetryThenFail     uint64 `ch:"retry_then_fail" json:"retry_then_fail"`
	NoRetry           uint64 `ch:"no_retry" json:"no_retry"`
	// SuccessShare is RetryThenSuccess / (RetryThenSuccess + RetryThenFail),
	// 0 when no chain was retried.
	SuccessShare float64 `ch:"-" json:"success_share"`
	// AvgAttempts is Attempts / Chains: calls per chain, first call included.
	AvgAttempts       float64 `ch:"-" json:"avg_attempts"`
	ArgsChangedChains uint64  `ch:"args_changed_chains" json:"args_changed_chains"`
	// Attempts is the number of calls in the chains (first calls and retries).
	Attempts uint64 `ch:"attempts" json:"-"`
}

// RetryOutcomes returns, per tool, category, declared and expected
// retryability of the first call, the retry chains that started in
// [f.From, f.To) and how they ended, with window as the retry window. Rows
// are ordered by tool, category, declared and expected retryability (with
// f.ByClient, per client too, or with f.ByPair, per tenant and server too,
// ordered by them first; a chain's client is its session's). With
// FoldedChainWindow the chains of the hours the retention job has folded
// come from their fold (one query for the bound, then the chains; with no
// hour of the range folded, the statement without the fold's branch).
func RetryOutcomes(ctx context.Context, db DB, f Filter, window time.Duration) ([]RetryOutcome, error) {
	args, folded, err := foldedChainArgs(ctx, db, f, window, 1, ChainHorizon)
	if err != nil {
		return nil, fmt.Errorf("retry outcomes: %w", err)
	}
	query := retryOutcomesForms.statement(folded, f.ByClient)
	var rows []RetryOutcome
	if err := db.Select(ctx, &rows, query, args...); err != nil {
		return nil, fmt.Errorf("retry outcomes: %w", err)
	}
	for i := range rows {
		r := &rows[i]
		if r.Tenant, r.Server, r.Client, r.Tool, err = splitRowKey(f, r.Tool); err != nil {
			return nil, fmt.Errorf("retry outcomes: %w", err)
		}
		r.SuccessShare = ratio(float64(r.RetryThenSuccess), float64(r.RetryThenSuccess+r.RetryThenFail))
		r.AvgAttempts = ratio(float64(r.Attempts), float64(r.Chains))
	}
	if f.ByClient || f.ByPair {
		slices.SortStableFunc(rows, func(a, b RetryOutcome) int {
			return cmp.Or(cmp.Compare(a.Client, b.Client), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Server, b.Server), cmp.Compare(a.Tool, b.Tool),
				cmp.Compare(a.Category, b.Category), cmp.Compare(a.DeclaredRetryable, b.DeclaredRetryable),
				cmp.Compare(a.ExpectedRetryable, b.ExpectedRetryable))
		})
	}
	return rows, nil
}
