package queries

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// retryLoopsForms are retry_loops.sql's two forms (foldForms).
var retryLoopsForms = newFoldForms("retry_loops.sql", mustSQL("retry_loops.sql"))

// The outcomes of a retry loop (RetryLoop.Outcome): its last call failed,
// or did not.
const (
	LoopRetryThenFail    = "retry_then_fail"
	LoopRetryThenSuccess = "retry_then_success"
)

// LoopOutcomes lists RetryLoop.Outcome's values.
var LoopOutcomes = []string{LoopRetryThenFail, LoopRetryThenSuccess}

// MaxRetryLoopsLimit is the most chains RetryLoops returns.
const MaxRetryLoopsLimit = 1000

// RetryLoopsOptions selects the chains of RetryLoops beyond Filter.
type RetryLoopsOptions struct {
	// MinAttempts is the fewest calls (first call and retries) a chain must
	// have, at least 2.
	MinAttempts int64
	// Limit is how many chains to return, 1 to MaxRetryLoopsLimit.
	Limit int64
}

// RetryLoop is one retry chain (docs/analytics.md, "Retry loops"): a
// session that kept calling a tool after failures, each call at most the
// retry window after a failed one. FirstCallID is the decimal text of the
// chain's first call's 64-bit id, which a JSON number would round.
type RetryLoop struct {
	Tenant  string `json:"tenant"`
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Session string `json:"session"`
	// Client is the session's clientInfo name (the least, if it changed).
	Client string    `json:"client"`
	Start  time.Time `json:"start"`
	// End is the time of the chain's last call (its first success, or its
	// last failed retry).
	End time.Time `json:"end"`
	// DurationMs is End - Start in milliseconds.
	DurationMs int64 `json:"duration_ms"`
	// Attempts counts the chain's calls, its first call included.
	Attempts uint64 `json:"attempts"`
	// Outcome is "retry_then_success" when the last call did not fail,
	// else "retry_then_fail".
	Outcome string `json:"outcome"`
	// ArgsChanged reports whether the chain's calls had different
	// arguments (an args_hash); false is a loop of identical calls.
	ArgsChanged bool `json:"args_changed"`
	// Category, DeclaredRetryable and ExpectedRetryable are the first call's.
	Category          string `json:"category"`
	DeclaredRetryable int8   `json:"declared_retryable"`
	ExpectedRetryable int8   `json:"expected_retryable"`
	FirstCallID       string `json:"first_call_id"`
}

// loopRow is a row of retry_loops.sql.
type loopRow struct {
	Tenant            string `ch:"tenant"`
	Server            string `ch:"server"`
	Tool              string `ch:"tool"`
	Session           string `ch:"session"`
	Client            string `ch:"client"`
	StartMs           int64  `ch:"start_ms"`
	EndMs             int64  `ch:"end_ms"`
	Attempts          uint64 `ch:"attempts"`
	Outcome           uint8  `ch:"outcome"`
	ArgsChanged       uint8  `ch:"args_changed"`
	Category          string `ch:"category"`
	DeclaredRetryable int8   `ch:"declared_retryable"`
	ExpectedRetryable int8   `ch:"expected_retryable"`
	FirstCallID       uint64 `ch:"first_call_id"`
}

// RetryLoops returns the retry chains started in [f.From, f.To) with at
// least o.MinAttempts calls (window is the retry window), the most calls
// first, then the latest start, then by tenant, server, session and tool;
// at most o.Limit of them. Chains are cut as RetryOutcomes cuts them, read
// up to the chain horizon after f.To: a chain still going there counts its
// calls up to it. As RetryOutcomes, with FoldedChainWindow the chains of the
// hours the retention job has folded come from their fold.
func RetryLoops(ctx context.Context, db DB, f Filter, window time.Duration, o RetryLoopsOptions) ([]RetryLoop, error) {
	if o.MinAttempts < 2 {
		return nil, fmt.Errorf("retry loops: min attempts %d: want at least 2", o.MinAttempts)
	}
	if o.Limit < 1 || o.Limit > MaxRetryLoopsLimit {
		return nil, fmt.Errorf("retry loops: limit %d: want 1 to %d", o.Limit, MaxRetryLoopsLimit)
	}
	args, folded, err := foldedChainArgs(ctx, db, f, window, 1, ChainHorizon)
	if err != nil {
		return nil, fmt.Errorf("retry loops: %w", err)
	}
	args = append(args,
		clickhouse.Named("min_attempts", o.MinAttempts),
		clickhouse.Named("min_failures", o.MinAttempts-1),
		clickhouse.Named("limit", o.Limit))
	var rows []loopRow
	if err := db.Select(ctx, &rows, retryLoopsForms.statement(folded), args...); err != nil {
		return nil, fmt.Errorf("retry loops: %w", err)
	}
	loops := make([]RetryLoop, len(rows))
	for i, r := range rows {
		outcome := LoopRetryThenFail
		if r.Outcome == 2 {
			outcome = LoopRetryThenSuccess
		}
		loops[i] = RetryLoop{
			Tenant: r.Tenant, Server: r.Server, Tool: r.Tool, Session: r.Session, Client: r.Client,
			Start: time.UnixMilli(r.StartMs).UTC(), End: time.UnixMilli(r.EndMs).UTC(), DurationMs: r.EndMs - r.StartMs,
			Attempts: r.Attempts, Outcome: outcome, ArgsChanged: r.ArgsChanged == 1,
			Category: r.Category, DeclaredRetryable: r.DeclaredRetryable, ExpectedRetryable: r.ExpectedRetryable,
			FirstCallID: strconv.FormatUint(r.FirstCallID, 10),
		}
	}
	return loops, nil
}
