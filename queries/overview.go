package queries

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

var overviewSQL = mustSQL("overview.sql")

// Totals are the header numbers of a range.
type Totals struct {
	Calls       uint64  `json:"calls"`
	Failures    uint64  `json:"failures"`
	NonFailed   uint64  `json:"non_failed"`
	Empty       uint64  `json:"empty"`
	Misflagged  uint64  `json:"misflagged"`
	Tools       uint64  `json:"tools"`
	Sessions    uint64  `json:"sessions"`
	FailureRate float64 `json:"failure_rate"` // failures / calls
	EmptyRate   float64 `json:"empty_rate"`   // empty / non-failed calls
}

// ToolFailures is one of the most failing tools.
type ToolFailures struct {
	Tool     string  `json:"tool"`
	Calls    uint64  `json:"calls"`
	Failures uint64  `json:"failures"`
	Rate     float64 `json:"rate"`
}

// overviewRow is one row of overview.sql: a tool's counts (part 0) or the
// range's distinct session keys (part 1).
type overviewRow struct {
	Part       uint8  `ch:"part"`
	Tool       string `ch:"tool_name"`
	Calls      uint64 `ch:"calls_n"`
	Failures   uint64 `ch:"failures_n"`
	Empty      uint64 `ch:"empty_n"`
	Misflagged uint64 `ch:"misflagged_n"`
	Sessions   uint64 `ch:"sessions_n"`
}

// Overview returns the range's totals and at most limit (at least 1) of
// the tools with failures, most failures first, ties by name, from one
// query. A call ingested more than once counts once, as its latest ingest.
func Overview(ctx context.Context, db DB, f Filter, limit int) (Totals, []ToolFailures, error) {
	var rows []overviewRow
	if err := db.Select(ctx, &rows, overviewSQL, f.args()...); err != nil {
		return Totals{}, nil, fmt.Errorf("overview: %w", err)
	}
	var t Totals
	sessionRows := 0
	top := []ToolFailures{}
	for _, r := range rows {
		switch r.Part {
		case 0:
			if r.Calls == 0 {
				continue
			}
			t.Calls += r.Calls
			t.Failures += r.Failures
			t.Empty += r.Empty
			t.Misflagged += r.Misflagged
			t.Tools++
			if r.Failures > 0 {
				top = append(top, ToolFailures{Tool: r.Tool, Calls: r.Calls, Failures: r.Failures,
					Rate: ratio(float64(r.Failures), float64(r.Calls))})
			}
		case 1:
			t.Sessions = r.Sessions
			sessionRows++
		default:
			return Totals{}, nil, fmt.Errorf("overview: unknown part %d", r.Part)
		}
	}
	if sessionRows != 1 {
		return Totals{}, nil, fmt.Errorf("overview: %d session rows, want 1", sessionRows)
	}
	t.NonFailed = t.Calls - t.Failures
	t.FailureRate = ratio(float64(t.Failures), float64(t.Calls))
	t.EmptyRate = ratio(float64(t.Empty), float64(t.NonFailed))
	slices.SortFunc(top, func(a, b ToolFailures) int {
		return cmp.Or(cmp.Compare(b.Failures, a.Failures), cmp.Compare(a.Tool, b.Tool))
	})
	return t, top[:min(len(top), max(limit, 1))], nil
}
