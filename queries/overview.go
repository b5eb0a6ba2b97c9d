package queries

import (
	"context"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2"
)

var (
	overviewTotalsSQL  = mustSQL("overview_totals.sql")
	topFailingToolsSQL = mustSQL("top_failing_tools.sql")
)

// Totals are the header numbers of a range.
type Totals struct {
	Calls       uint64  `ch:"calls_n" json:"calls"`
	Failures    uint64  `ch:"failures_n" json:"failures"`
	NonFailed   uint64  `ch:"non_failed_n" json:"non_failed"`
	Empty       uint64  `ch:"empty_n" json:"empty"`
	Misflagged  uint64  `ch:"misflagged_n" json:"misflagged"`
	Tools       uint64  `ch:"tools_n" json:"tools"`
	Sessions    uint64  `ch:"sessions_n" json:"sessions"`
	FailureRate float64 `ch:"-" json:"failure_rate"` // failures / calls
	EmptyRate   float64 `ch:"-" json:"empty_rate"`   // empty / non-failed calls
}

// ToolFailures is one of the most failing tools.
type ToolFailures struct {
	Tool     string  `ch:"tool_name" json:"tool"`
	Calls    uint64  `ch:"calls_n" json:"calls"`
	Failures uint64  `ch:"failures_n" json:"failures"`
	Rate     float64 `ch:"-" json:"rate"`
}

// OverviewTotals returns the range's totals.
func OverviewTotals(ctx context.Context, db DB, f Filter) (Totals, error) {
	var rows []Totals
	if err := db.Select(ctx, &rows, overviewTotalsSQL, f.args()...); err != nil {
		return Totals{}, fmt.Errorf("overview totals: %w", err)
	}
	if len(rows) != 1 {
		return Totals{}, fmt.Errorf("overview totals: %d rows", len(rows))
	}
	t := rows[0]
	t.FailureRate = ratio(float64(t.Failures), float64(t.Calls))
	t.EmptyRate = ratio(float64(t.Empty), float64(t.NonFailed))
	return t, nil
}

// TopFailingTools returns at most limit tools with failures, most first.
func TopFailingTools(ctx context.Context, db DB, f Filter, limit int64) ([]ToolFailures, error) {
	var rows []ToolFailures
	if err := db.Select(ctx, &rows, topFailingToolsSQL, append(f.args(), clickhouse.Named("limit", max(limit, 1)))...); err != nil {
		return nil, fmt.Errorf("top failing tools: %w", err)
	}
	for i := range rows {
		rows[i].Rate = ratio(float64(rows[i].Failures), float64(rows[i].Calls))
	}
	return rows, nil
}
