package queries_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/queries"
)

// TestRetryLoopsMatchReference runs the retry loops query on random traffic
// (with its long retry storms) on every engine and compares it, row for
// row, with the reference implementation, over ranges, filters, windows,
// minimums and limits chosen so that chains cross both ends of the range
// and the chain horizon, and a limit cuts the list.
func TestRetryLoopsMatchReference(t *testing.T) {
	ctx := context.Background()
	calls, replays := genTraffic(20261207, 2000, t0, 3*time.Hour)
	all := append(calls[:len(calls):len(calls)], replays...)
	h := func(d time.Duration) time.Time { return t0.Add(d) }
	type loopCase struct {
		f      queries.Filter
		window time.Duration
		o      queries.RetryLoopsOptions
	}
	cases := []loopCase{
		{queries.Filter{From: h(time.Hour), To: h(2 * time.Hour)}, time.Minute, queries.RetryLoopsOptions{MinAttempts: 2, Limit: 1000}},
		{queries.Filter{From: h(time.Hour), To: h(2 * time.Hour)}, time.Minute, queries.RetryLoopsOptions{MinAttempts: 5, Limit: 7}},
		{queries.Filter{From: h(0), To: h(4 * time.Hour)}, 5 * time.Second, queries.RetryLoopsOptions{MinAttempts: 3, Limit: 1000}},
		{queries.Filter{From: h(30 * time.Minute), To: h(150 * time.Minute), Tenant: "acme"}, time.Second, queries.RetryLoopsOptions{MinAttempts: 2, Limit: 50}},
		{queries.Filter{From: h(time.Hour), To: h(2 * time.Hour), Server: "crm", Tool: "search"}, time.Minute, queries.RetryLoopsOptions{MinAttempts: 4, Limit: 1000}},
		{queries.Filter{From: h(time.Hour + 500*time.Millisecond), To: h(80*time.Minute + 1500*time.Millisecond)}, 5 * time.Second, queries.RetryLoopsOptions{MinAttempts: 2, Limit: 1000}},
		{queries.Filter{From: h(0), To: h(4 * time.Hour), Tenants: []string{"globex"}}, time.Minute, queries.RetryLoopsOptions{MinAttempts: 30, Limit: 1000}},
	}
	want := make([][]queries.RetryLoop, len(cases))
	rows, long, identical, recovered, cut := 0, 0, 0, 0, false
	for i, c := range cases {
		want[i] = refRetryLoops(all, c.f, c.window, c.o)
		every := c.o
		every.Limit = 1 << 30
		cut = cut || len(refRetryLoops(all, c.f, c.window, every)) > len(want[i])
		rows += len(want[i])
		for _, l := range want[i] {
			if l.Attempts >= 30 {
				long++
			}
			if l.Attempts >= 3 && !l.ArgsChanged {
				identical++
			}
			if l.Outcome == "retry_then_success" {
				recovered++
			}
		}
	}
	if rows < 200 || long < 5 || identical < 5 || recovered < 20 || !cut {
		t.Fatalf("the reference gives only %d loops, %d of 30 calls or more, %d of 3 or more identical calls, %d recovered, a limit cutting the list %v: the traffic is too thin to test much",
			rows, long, identical, recovered, cut)
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, calls)
			e.Insert(t, replays)
			for i, c := range cases {
				got, err := queries.RetryLoops(ctx, e.DB, c.f, c.window, c.o)
				if err != nil {
					t.Fatal(err)
				}
				if !equalRows(got, want[i]) {
					t.Errorf("[%s, %s) tenant=%q server=%q tool=%q tenants=%q window=%s %+v: SQL and reference differ\n got %s\nwant %s",
						c.f.From.Format("15:04:05.000"), c.f.To.Format("15:04:05.000"), c.f.Tenant, c.f.Server, c.f.Tool, c.f.Tenants, c.window, c.o,
						dump(got), dump(want[i]))
				}
			}
		})
	}
}

// TestRetryLoopsRejectsBadOptions: a minimum under two calls (every failure
// would be a loop) and a limit outside 1 to MaxRetryLoopsLimit are errors,
// before any query.
func TestRetryLoopsRejectsBadOptions(t *testing.T) {
	f := queries.Filter{From: t0, To: t0.Add(time.Hour)}
	for _, o := range []queries.RetryLoopsOptions{
		{MinAttempts: 1, Limit: 10},
		{MinAttempts: 2, Limit: 0},
		{MinAttempts: 2, Limit: queries.MaxRetryLoopsLimit + 1},
	} {
		if _, err := queries.RetryLoops(context.Background(), nil, f, time.Minute, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if _, err := queries.RetryLoops(context.Background(), nil, queries.Filter{From: t0, To: t0}, time.Minute, queries.RetryLoopsOptions{MinAttempts: 2, Limit: 1}); err == nil {
		t.Error("an empty range accepted")
	}
}
