package queries_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/queries"
)

// BenchmarkScale measures every endpoint's query on synthetic calls spread
// over 7 days (MCPLENS_BENCH_CALLS, default 1,000,000; MCPLENS_BENCH_FAILED_PCT
// of them failed, default 15), for a 24 h and a 7 d window, on every engine, on the data chtest.Synthetic generates inside
// each engine (1 % of it ingested again, half of that reclassified, so that
// every query pays for counting a re-ingested call once). See BENCHMARKS.md
// for the method and numbers.
func BenchmarkScale(b *testing.B) {
	n := chtest.BenchCalls(b, 1_000_000)
	failed := chtest.BenchFailedPercent(b, chtest.MaxFailedPercent)
	end := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	span := 7 * 24 * time.Hour
	ctx := context.Background()
	windows := []struct {
		name string
		f    queries.Filter
	}{
		{"24h", queries.Filter{From: end.Add(-24 * time.Hour), To: end}},
		{"7d", queries.Filter{From: end.Add(-span), To: end}},
	}
	endpoints := []struct {
		name string
		run  func(queries.DB, queries.Filter) error
	}{
		{"failure-rates", func(db queries.DB, f queries.Filter) error {
			_, err := queries.FailureRatesFrom(ctx, db, f, 0, false)
			return err
		}},
		{"failure-rates-rollup", func(db queries.DB, f queries.Filter) error {
			_, err := queries.FailureRatesFrom(ctx, db, f, time.Hour, true)
			return err
		}},
		{"retry-outcomes", func(db queries.DB, f queries.Filter) error {
			_, err := queries.RetryOutcomes(ctx, db, f, time.Minute)
			return err
		}},
		{"recalls", func(db queries.DB, f queries.Filter) error {
			_, err := queries.Recalls(ctx, db, f, time.Minute)
			return err
		}},
		{"misclassifications", func(db queries.DB, f queries.Filter) error {
			_, err := queries.Misclassifications(ctx, db, f, time.Minute, 5)
			return err
		}},
		{"empty-results", func(db queries.DB, f queries.Filter) error {
			_, err := queries.EmptyResults(ctx, db, f, queries.EmptyResultsOptions{MinCalls: 1, Limit: 100})
			return err
		}},
		{"invalid-argument-spikes", func(db queries.DB, f queries.Filter) error {
			// Thresholds so low that every bucket is a spike: the endpoint's
			// second query (the top arguments of each spike) runs too.
			_, err := queries.InvalidArgumentSpikes(ctx, db, f, queries.SpikeOptions{Ratio: 0.5, MinShare: 0.01})
			return err
		}},
		{"invalid-argument-spikes-default", func(db queries.DB, f queries.Filter) error {
			// The default thresholds: the synthetic fleet's even 3 % share
			// passes no floor, so no baseline is read, as in a healthy fleet.
			_, err := queries.InvalidArgumentSpikes(ctx, db, f, queries.SpikeOptions{})
			return err
		}},
		{"overview", func(db queries.DB, f queries.Filter) error {
			_, _, err := queries.Overview(ctx, db, f, 10)
			return err
		}},
	}
	for _, e := range chtest.Engines(b) {
		start := time.Now()
		if err := chtest.Synthetic(ctx, e, n, failed, end, span); err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: generated %d calls, %d %% failed, in %s (background merges included)", e.Name, n, failed, time.Since(start).Round(time.Millisecond))
		for _, w := range windows {
			for _, ep := range endpoints {
				b.Run(strings.SplitN(e.Name, "-", 2)[0]+"/"+strconv.FormatInt(n, 10)+"/"+w.name+"/"+ep.name, func(b *testing.B) {
					for b.Loop() {
						if err := ep.run(e.DB, w.f); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// TestSyntheticFailedShare checks the scale data's failed share, which
// decides how many (session, tool) groups the chain queries collect: about
// the percentage asked for, and every row's failure flag, error flag and
// category telling the same story, re-ingested copies included.
func TestSyntheticFailedShare(t *testing.T) {
	end := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for _, pct := range []int{chtest.MaxFailedPercent, 3} {
		t.Run(strconv.Itoa(pct)+"pct", func(t *testing.T) {
			for _, e := range chtest.Engines(t) {
				t.Run(e.Name, func(t *testing.T) {
					ctx := context.Background()
					if err := chtest.Synthetic(ctx, e, 20_000, pct, end, 24*time.Hour); err != nil {
						t.Fatal(err)
					}
					var rows []struct {
						Originals    uint64 `ch:"originals"`
						Failed       uint64 `ch:"failed"`
						Inconsistent uint64 `ch:"inconsistent"`
					}
					err := e.DB.Select(ctx, &rows, `SELECT
  countIf(ingested_ms = 1) AS originals,
  countIf(ingested_ms = 1 AND is_failure = 1) AS failed,
  countIf(is_failure != toUInt8(CAST(category AS String) NOT IN ('OK', 'EMPTY_RESULT'))
    OR ingested_ms = 1 AND is_error != toInt8(is_failure)) AS inconsistent
FROM calls`)
					if err != nil {
						t.Fatal(err)
					}
					r := rows[0]
					if r.Originals != 20_000 {
						t.Fatalf("%d calls generated, want 20000", r.Originals)
					}
					if got := float64(r.Failed) / float64(r.Originals) * 100; got < float64(pct)-1 || got > float64(pct)+1 {
						t.Errorf("%.2f %% of the calls failed, want %d %% ± 1", got, pct)
					}
					if r.Inconsistent != 0 {
						t.Errorf("%d rows whose is_failure, is_error and category disagree", r.Inconsistent)
					}
				})
			}
		})
	}
	if err := chtest.Synthetic(context.Background(), chtest.Engines(t)[0], 10, 0, end, time.Hour); err == nil {
		t.Error("0 % failed accepted")
	}
}
