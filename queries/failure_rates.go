package queries

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

var failureRatesSQL = mustSQL("failure_rates.sql")

// FailureRate is one (tool, category, code) among the failures of a tool.
type FailureRate struct {
	Time     time.Time `ch:"time" json:"time"`
	Tool     string    `ch:"tool" json:"tool"`
	Category string    `ch:"category" json:"category"`
	Code     int64     `ch:"code" json:"code"`
	Calls    uint64    `ch:"calls" json:"calls"`
	Failures uint64    `ch:"failures" json:"failures"`
	Rate     float64   `ch:"rate" json:"rate"`
}

// FailureRates returns, per tool, failure category and JSON-RPC code (0 when
// the failure was not a JSON-RPC error), the failures and the tool's calls in
// each bucket of step (one bucket, Time = f.From, when step is 0). Rows are
// ordered by time, tool, category, code.
func FailureRates(ctx context.Context, db DB, f Filter, step time.Duration) ([]FailureRate, error) {
	var rows []FailureRate
	args := append(f.args(), clickhouse.Named("step_s", stepSeconds(f, step)))
	if err := db.Select(ctx, &rows, failureRatesSQL, args...); err != nil {
		return nil, fmt.Errorf("failure rates: %w", err)
	}
	for i := range rows {
		rows[i].Rate = ratio(float64(rows[i].Failures), float64(rows[i].Calls))
	}
	return rows, nil
}
