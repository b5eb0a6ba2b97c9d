package queries_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/queries"
)

func TestOverview(t *testing.T) {
	ctx := context.Background()
	f := queries.Filter{From: t0, To: t0.Add(2 * time.Hour), Tenant: "acme"}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			fx := rows(failureFixture()...)
			fx[4].Misflagged = 1 // the empty result came with isError true
			e.Insert(t, fx)
			got, top, err := queries.Overview(ctx, e.DB, f, 10)
			if err != nil {
				t.Fatal(err)
			}
			want := queries.Totals{Calls: 7, Failures: 4, NonFailed: 3, Empty: 1, Misflagged: 1, Tools: 2, Sessions: 2,
				FailureRate: 4.0 / 7, EmptyRate: 1.0 / 3}
			if got != want {
				t.Errorf("totals\n got %+v\nwant %+v", got, want)
			}
			assertRows(t, top, []queries.ToolFailures{
				{Tool: "search_docs", Calls: 5, Failures: 3, Rate: 0.6},
				{Tool: "get_doc", Calls: 2, Failures: 1, Rate: 0.5},
			})
			// The limit cuts the list, never the totals; 0 still shows one.
			for _, limit := range []int{1, 0} {
				got, top, err := queries.Overview(ctx, e.DB, f, limit)
				if err != nil {
					t.Fatal(err)
				}
				if got != want || len(top) != 1 || top[0].Tool != "search_docs" {
					t.Errorf("limit %d: totals %+v, tools %+v", limit, got, top)
				}
			}
			empty, top, err := queries.Overview(ctx, e.DB, queries.Filter{From: t0.Add(-time.Hour), To: t0}, 10)
			if err != nil {
				t.Fatal(err)
			}
			if empty != (queries.Totals{}) || top == nil || len(top) != 0 {
				t.Errorf("empty range: %+v, tools %#v (want an empty, non-nil list: JSON [])", empty, top)
			}
		})
	}
}

// refOverview is the overview by definition: the latest ingest of each call
// in the range that matches the filter, its tools sorted by failures.
func refOverview(calls []pipeline.Call, f queries.Filter, limit int) (queries.Totals, []queries.ToolFailures) {
	var t queries.Totals
	tools := map[string]*queries.ToolFailures{}
	sessions := map[string]bool{}
	for _, c := range refDedupe(calls) {
		if !refInRange(f, c.TimeMs) || !refMatches(f, c) || len(f.Tenants) > 0 && !slices.Contains(f.Tenants, c.Tenant) {
			continue
		}
		t.Calls++
		sessions[c.SessionKey] = true
		tf := tools[c.Tool]
		if tf == nil {
			tf = &queries.ToolFailures{Tool: c.Tool}
			tools[c.Tool] = tf
		}
		tf.Calls++
		if c.IsFailure == 1 {
			t.Failures++
			tf.Failures++
		}
		if c.Category == string(classify.EmptyResult) {
			t.Empty++
		}
		t.Misflagged += uint64(c.Misflagged)
	}
	t.NonFailed, t.Tools, t.Sessions = t.Calls-t.Failures, uint64(len(tools)), uint64(len(sessions))
	if t.Calls > 0 {
		t.FailureRate = float64(t.Failures) / float64(t.Calls)
	}
	if t.NonFailed > 0 {
		t.EmptyRate = float64(t.Empty) / float64(t.NonFailed)
	}
	top := []queries.ToolFailures{}
	for _, tf := range tools {
		if tf.Failures > 0 {
			tf.Rate = float64(tf.Failures) / float64(tf.Calls)
			top = append(top, *tf)
		}
	}
	slices.SortFunc(top, func(a, b queries.ToolFailures) int {
		return cmp.Or(cmp.Compare(b.Failures, a.Failures), cmp.Compare(a.Tool, b.Tool))
	})
	return t, top[:min(len(top), limit)]
}

// TestOverviewMatchesReference compares the overview with its definition on
// random traffic with replays in the same and in later inserts and calls
// re-ingested with another classification (a stale copy must leave every
// count, the EMPTY_RESULT and misflagged ones included), over filters, an
// allow-list and limits that cut the list.
func TestOverviewMatchesReference(t *testing.T) {
	ctx := context.Background()
	calls, replays := genTraffic(20261201, 2000, t0, 3*time.Hour)
	all := append(append([]pipeline.Call{}, calls...), replays...)
	h := func(d time.Duration) time.Time { return t0.Add(d) }
	cases := []struct {
		f     queries.Filter
		limit int
	}{
		{queries.Filter{From: h(0), To: h(3 * time.Hour)}, 100},
		{queries.Filter{From: h(time.Hour), To: h(2 * time.Hour)}, 2},
		{queries.Filter{From: h(30 * time.Minute), To: h(150 * time.Minute), Tenant: "acme"}, 10},
		{queries.Filter{From: h(time.Hour), To: h(2 * time.Hour), Server: "crm", Tool: "search"}, 10},
		{queries.Filter{From: h(0), To: h(3 * time.Hour), Tenants: []string{"globex", "initech"}}, 3},
		{queries.Filter{From: h(time.Hour + 500*time.Millisecond), To: h(80*time.Minute + 1500*time.Millisecond)}, 10},
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, calls)
			e.Insert(t, replays)
			for _, c := range cases {
				name := fmt.Sprintf("[%s, %s) tenant=%q server=%q tool=%q tenants=%q limit=%d",
					c.f.From.Format("15:04:05.000"), c.f.To.Format("15:04:05.000"), c.f.Tenant, c.f.Server, c.f.Tool, c.f.Tenants, c.limit)
				wantTotals, wantTop := refOverview(all, c.f, c.limit)
				if wantTotals.Empty == 0 || wantTotals.Misflagged == 0 || len(wantTop) == 0 {
					t.Fatalf("%s: the reference has no empty results, misflagged calls or failing tools: %+v", name, wantTotals)
				}
				got, top, err := queries.Overview(ctx, e.DB, c.f, c.limit)
				if err != nil {
					t.Fatal(err)
				}
				if got != wantTotals {
					t.Errorf("%s: totals\n got %+v\nwant %+v", name, got, wantTotals)
				}
				if !equalRows(top, wantTop) {
					t.Errorf("%s: top failing tools\n got %s\nwant %s", name, dump(top), dump(wantTop))
				}
			}
		})
	}
}
