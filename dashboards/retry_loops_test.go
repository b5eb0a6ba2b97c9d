package dashboards_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/traffic"
)

// TestRetryLoopsPanel checks the Retry loops panel against GET
// /api/v1/retry-loops with its defaults (queries.RetryLoops: 60 s window,
// 5 calls, 50 rows), which TestRetryLoopsMatchReference holds to the
// reference implementation: the generated traffic with two retry storms (40
// calls and 5, stormyCalls) and a quarter of it ingested again, over its
// whole day and over a range that ends inside the first storm, on both
// engines, first from the raw calls alone, then with the complete hours'
// chains folded (compact.RollupChains), which both read up to the chain
// bound. The panel's range is the plugin's: to is a whole second,
// inclusive.
func TestRetryLoopsPanel(t *testing.T) {
	calls, busiest := stormyCalls(t)
	day := traffic.DefaultStart.Truncate(24 * time.Hour)
	// A loop of 6 calls from 11:59:30: 11:00's fold holds it, and once
	// 12:00 is the bound (the open storm's hour) the raw calls, read from
	// 60 s before it, hold its start too: the panel must count it once.
	first := slices.IndexFunc(calls, func(c pipeline.Call) bool { return c.SessionKey == "storm-open" })
	calls = append(calls, retryStorm(calls[first], "storm-edge", day.Add(11*time.Hour+59*time.Minute+30*time.Second), 6, 10*time.Second)...)
	replay, _ := reingested(calls, nil)
	tg := panelTargetOf(t, busiest, "retry_loops")
	ranges := []macroRange{
		{from: traffic.DefaultStart.Add(-time.Hour), to: traffic.DefaultStart.Add(23 * time.Hour), interval: 5 * time.Minute},
		// Ends at 13:00: the long storm started in range and is followed
		// past the end, to the horizon.
		{from: day.Add(9*time.Hour + 30*time.Minute), to: day.Add(13 * time.Hour), interval: 5 * time.Minute},
	}
	rawThenFolded(t, calls, replay, func(t *testing.T, e *chtest.Engine, folded bool) {
		if folded {
			r := ranges[0]
			bound := resolveBounds(t, e, tg.sql, tg.bounds, tg.vars, r)["chain_bound"].current()
			if b, err := strconv.ParseInt(bound, 10, 64); err != nil || b < r.from.Truncate(time.Hour).Add(2*time.Hour).Unix() {
				t.Fatalf("chain_bound %s over [%s, %s]: want the range's first hours folded", bound, r.from, r.to)
			}
		}
		got := checkRetryLoopsPanel(t, e, tg, ranges, folded)
		if n := strings.Count(got, " storm-edge "); n != 1 {
			t.Errorf("folded %v: the loop that starts 30 s before 12:00 is listed %d times, want once", folded, n)
		}
	})
}

// checkRetryLoopsPanel compares the Retry loops panel with GET
// /api/v1/retry-loops over each of ranges, and returns the panel's rows
// over the first, one a line.
func checkRetryLoopsPanel(t *testing.T, e *chtest.Engine, tg panelTarget, ranges []macroRange, folded bool) string {
	t.Helper()
	var first []string
	for ri, r := range ranges {
		_, rows := query(t, e, tg.expand(t, e, tg.sql, r))
		var got []string
		for _, row := range rows {
			got = append(got, fmt.Sprintf("%v %v/%v/%v %v %q attempts=%v %v %v %v expected=%v %.3fs",
				row[0].(time.Time).UTC().Format(time.DateTime), row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8], row[9], row[10], row[11]))
		}
		loops, err := queries.RetryLoops(context.Background(), e.DB, queries.Filter{From: r.from, To: r.to.Add(time.Second)},
			time.Minute, queries.RetryLoopsOptions{MinAttempts: 5, Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, l := range loops {
			args := "same"
			if l.ArgsChanged {
				args = "changed"
			}
			expected := map[int8]string{1: "yes", 0: "no", -1: "unknown"}[l.ExpectedRetryable]
			want = append(want, fmt.Sprintf("%v %v/%v/%v %v %q attempts=%v %v %v %v expected=%v %.3fs",
				l.Start.Truncate(time.Second).Format(time.DateTime), l.Tenant, l.Server, l.Tool, l.Session, l.Client, l.Attempts,
				l.Outcome, args, l.Category, expected, float64(l.DurationMs)/1000))
		}
		if !slices.Equal(got, want) {
			t.Errorf("range %d (folded %v): panel and GET /api/v1/retry-loops differ\n panel %q\n   api %q", ri, folded, got, want)
		}
		if len(got) < 2 || !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, " storm-open ") }) {
			t.Errorf("range %d (folded %v): %d loops, none of them the 40-call storm: the test proves little\n%q", ri, folded, len(got), got)
		}
		if ri == 0 {
			first = got
		}
	}
	return strings.Join(first, "\n")
}
