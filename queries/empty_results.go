package queries

import (
	"context"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2"
)

var emptyResultsSQL = mustSQL("empty_results.sql")

// EmptyResult is the empty-result rate of one (tool, argument key, value).
type EmptyResult struct {
	Tool     string  `ch:"tool_name" json:"tool"`
	ArgKey   string  `ch:"arg_key" json:"arg_key"`
	ArgValue string  `ch:"arg_value" json:"arg_value"`
	Calls    uint64  `ch:"calls_n" json:"calls"`
	Empty    uint64  `ch:"empty_n" json:"empty"`
	Rate     float64 `ch:"-" json:"rate"`
}

// EmptyResultsOptions narrows EmptyResults.
type EmptyResultsOptions struct {
	ArgKey   string // only this argument key ("" = all)
	MinCalls int64  // groups with fewer non-failed calls are left out
	Limit    int64  // at most this many rows, the most empty results first
}

// EmptyResults returns, per tool and argument key=value, the non-failed
// calls and those among them that were EMPTY_RESULT, ordered by empty
// results, then rate, then tool, key and value.
func EmptyResults(ctx context.Context, db DB, f Filter, o EmptyResultsOptions) ([]EmptyResult, error) {
	var rows []EmptyResult
	args := append(f.args(),
		clickhouse.Named("arg_key", o.ArgKey),
		clickhouse.Named("min_calls", max(o.MinCalls, 1)),
		clickhouse.Named("limit", max(o.Limit, 1)))
	if err := db.Select(ctx, &rows, emptyResultsSQL, args...); err != nil {
		return nil, fmt.Errorf("empty results: %w", err)
	}
	for i := range rows {
		rows[i].Rate = ratio(float64(rows[i].Empty), float64(rows[i].Calls))
	}
	return rows, nil
}
