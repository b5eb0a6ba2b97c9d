package queries

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

var (
	failureRatesSQL       = mustSQL("failure_rates.sql")
	failureRatesRollupSQL = mustSQL("failure_rates_rollup.sql")
)

// RollupBucket is the width of the calls_5m rollup.
const RollupBucket = 5 * time.Minute

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
//
// When from, to and step are multiples of RollupBucket it reads the calls_5m
// rollup, otherwise the raw calls; both give the same rows (a test checks it).
func FailureRates(ctx context.Context, db DB, f Filter, step time.Duration) ([]FailureRate, error) {
	aligned := f.From.Unix()%300 == 0 && f.To.Unix()%300 == 0 && f.From.Nanosecond() == 0 &&
		f.To.Nanosecond() == 0 && step%RollupBucket == 0
	return failureRates(ctx, db, f, step, aligned)
}

// FailureRatesFrom is FailureRates with the source forced: the rollup when
// rollup is true (the caller guarantees the alignment), else the raw calls.
func FailureRatesFrom(ctx context.Context, db DB, f Filter, step time.Duration, rollup bool) ([]FailureRate, error) {
	return failureRates(ctx, db, f, step, rollup)
}

func failureRates(ctx context.Context, db DB, f Filter, step time.Duration, rollup bool) ([]FailureRate, error) {
	var rows []FailureRate
	args := append(f.args(), clickhouse.Named("step_s", stepSeconds(f, step)))
	q := failureRatesSQL
	if rollup {
		q = failureRatesRollupSQL
	}
	if err := db.Select(ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("failure rates: %w", err)
	}
	for i := range rows {
		rows[i].Rate = ratio(float64(rows[i].Failures), float64(rows[i].Calls))
	}
	return rows, nil
}
