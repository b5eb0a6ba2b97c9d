package queries_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/queries"
)

// benchCalls is the size of the benchmarks' traffic: generated calls over
// one day, replays included.
const benchCalls = 200_000

// benchRetry runs query over benchCalls generated calls in a 24 h range on
// every engine, one sub-benchmark per engine.
func benchRetry(b *testing.B, query func(context.Context, queries.DB, queries.Filter) (int, error)) {
	calls, replays := genTraffic(7, benchCalls/12, t0, 24*time.Hour)
	all := append(calls, replays...)
	if len(all) < benchCalls {
		b.Fatalf("generated %d calls, want at least %d", len(all), benchCalls)
	}
	all = all[:benchCalls]
	f := queries.Filter{From: t0, To: t0.Add(24 * time.Hour)}
	ctx := context.Background()
	for _, e := range chtest.Engines(b) {
		e.Insert(b, all)
		b.Run(e.Name, func(b *testing.B) {
			rows := 0
			for b.Loop() {
				n, err := query(ctx, e.DB, f)
				if err != nil {
					b.Fatal(err)
				}
				rows = n
			}
			b.ReportMetric(float64(rows), "rows")
		})
	}
}

func BenchmarkRetryOutcomes(b *testing.B) {
	benchRetry(b, func(ctx context.Context, db queries.DB, f queries.Filter) (int, error) {
		rows, err := queries.RetryOutcomes(ctx, db, f, queries.DefaultRetryWindow)
		return len(rows), err
	})
}

func BenchmarkRecalls(b *testing.B) {
	benchRetry(b, func(ctx context.Context, db queries.DB, f queries.Filter) (int, error) {
		rows, err := queries.Recalls(ctx, db, f, queries.DefaultRetryWindow)
		return len(rows), err
	})
}

func BenchmarkMisclassifications(b *testing.B) {
	benchRetry(b, func(ctx context.Context, db queries.DB, f queries.Filter) (int, error) {
		rows, err := queries.Misclassifications(ctx, db, f, queries.DefaultRetryWindow, queries.DefaultMinChains)
		return len(rows), err
	})
}
