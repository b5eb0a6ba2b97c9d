package gauges_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/gauges"
)

// countingDB counts the statements a refresh sends.
type countingDB struct {
	chtest.DB
	n atomic.Int64
}

func (c *countingDB) Select(ctx context.Context, dest any, query string, args ...any) error {
	c.n.Add(1)
	return c.DB.Select(ctx, dest, query, args...)
}

// BenchmarkRefresh times one refresh of the exporter with its defaults (the
// trailing hour, at most 50 (tenant, server) pairs) on the synthetic fleet
// of queries.BenchmarkScale (MCPLENS_BENCH_CALLS calls over 7 days, default
// 1,000,000; 140 (tenant, server) pairs; MCPLENS_BENCH_FAILED_PCT failed,
// default 15; MCPLENS_BENCH_TOOL_NAMES names), every complete hour folded as
// the retention job keeps them, on every engine: ns/op is the ClickHouse
// time the api spends every minute to keep its gauges, statements/op how
// many queries that takes. BENCHMARKS.md has the numbers:
//
//	MCPLENS_BENCH_CALLS=10000000 go test -run '^$' -bench BenchmarkRefresh -benchtime 5x ./gauges
func BenchmarkRefresh(b *testing.B) {
	n := chtest.BenchCalls(b, 1_000_000)
	failed := chtest.BenchFailedPercent(b, chtest.MaxFailedPercent)
	names := chtest.BenchToolNames(b)
	end := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	for _, e := range chtest.Engines(b) {
		err := chtest.Synthetic(ctx, e, chtest.SyntheticData{Calls: n, FailedPct: failed, ToolNames: names, End: end, Span: 7 * 24 * time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := compact.RollupHours(ctx, e.DB, end.Add(time.Hour), 30*24*time.Hour, 0); err != nil {
			b.Fatal(err)
		}
		if _, err := compact.RollupChains(ctx, e.DB, end.Add(time.Hour), 30*24*time.Hour, 0); err != nil {
			b.Fatal(err)
		}
		// The minute after the data ends: the trailing hour is its last.
		at := end.Add(time.Minute)
		db := &countingDB{DB: e.DB}
		x := gauges.New(db, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)),
			gauges.Config{Now: func() time.Time { return at }, QueryTimeout: 10 * time.Minute})
		b.Run(e.Name, func(b *testing.B) {
			db.n.Store(0)
			for b.Loop() {
				if err := x.Refresh(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(db.n.Load())/float64(b.N), "statements/op")
		})
	}
}
