package queries_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/queries"
)

// genWindows are the retry windows the generated gaps straddle.
var genWindows = []time.Duration{queries.DefaultRetryWindow, 5 * time.Second}

// genClients are the clients of genTraffic's sessions, in turn; "" is a
// session whose client was not captured.
var genClients = []string{"claude-desktop", "cursor", ""}

// genTraffic returns random calls for the differential test and the
// benchmarks: sessions spread over [start, start+span) across tenants,
// servers, tools and clients, with gaps at and around the retry windows (±1 ms),
// equal milliseconds and request ids, sessionless calls, continuations,
// misflagged calls, retry loops that outlast the chain horizon, and replays
// of calls (identical, or reclassified with a later IngestedMs). The second
// result holds replays meant for a later insert; the first also holds some.
func genTraffic(seed uint64, sessions int, start time.Time, span time.Duration) (calls, replays []pipeline.Call) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	tenants := []string{"acme", "globex", "initech"}
	servers := []string{"kb", "crm"}
	tools := []string{"search", "fetch", "update", "login"}
	failures := []classify.Category{classify.RateLimited, classify.Unavailable, classify.UpstreamTimeout,
		classify.Internal, classify.InvalidArgument, classify.NotFound, classify.Unauthenticated, classify.Unclassified}
	nonFailures := []classify.Category{classify.OK, classify.OK, classify.OK, classify.EmptyResult, classify.Cancelled}
	classifyRandomly := func(c *pipeline.Call, failPct int) {
		cat := nonFailures[r.IntN(len(nonFailures))]
		if r.IntN(100) < failPct {
			cat = failures[r.IntN(len(failures))]
		}
		c.Category, c.IsFailure, c.IsError = string(cat), 0, 0
		if cat.Failure() {
			c.IsFailure, c.IsError = 1, 1
		}
		c.DeclaredRetryable = int8(r.IntN(3)) - 1
		c.ExpectedRetryable = cat.ExpectedRetryable()
		c.Misflagged = 0
		if r.IntN(100) < 5 {
			c.Misflagged = 1
		}
		// A retry-after hint on a third of the failures: at, under and
		// over the gaps below (0, the windows, up to twice a window).
		c.RetryAfterMs = 0
		if cat.Failure() && r.IntN(3) == 0 {
			w := genWindows[r.IntN(len(genWindows))].Milliseconds()
			c.RetryAfterMs = []int64{1, w / 2, w, w + 1, 1 + r.Int64N(2*w)}[r.IntN(5)]
		}
	}
	gap := func(storm int64) int64 {
		if storm > 0 { // a retry loop: gaps at or just under the window
			return storm - r.Int64N(2)*r.Int64N(storm/2)
		}
		w := genWindows[r.IntN(len(genWindows))].Milliseconds()
		switch r.IntN(10) {
		case 0:
			return 0
		case 1:
			return w
		case 2:
			return w + 1
		case 3:
			return w - 1
		case 4:
			return r.Int64N(1000)
		case 5:
			return r.Int64N(10 * 60_000)
		default:
			return r.Int64N(2 * w)
		}
	}
	var id uint64
	for s := range sessions {
		tenant := tenants[r.IntN(len(tenants))]
		server := servers[r.IntN(len(servers))]
		sessionTools := tools[:1+r.IntN(len(tools))]
		if r.IntN(2) == 0 {
			sessionTools = tools[r.IntN(len(tools)):][:1]
		}
		sessionless := r.IntN(10) == 0
		ms := start.UnixMilli() + r.Int64N(span.Milliseconds())
		n, failPct, storm := 1+r.IntN(24), 45, int64(0)
		if r.IntN(100) < 4 { // a long retry loop of one tool, past the chain horizon
			n, failPct, storm = 40+r.IntN(40), 97, genWindows[r.IntN(len(genWindows))].Milliseconds()
			sessionTools, sessionless = sessionTools[:1], false
		}
		for i := range n {
			ms += gap(storm)
			id++
			c := pipeline.Call{
				Time: time.UnixMilli(ms).UTC(), TimeMs: ms, DurationMs: 5, Tenant: tenant, Server: server,
				Tool: sessionTools[r.IntN(len(sessionTools))], SessionID: fmt.Sprintf("s%d", s), Client: genClients[s%len(genClients)],
				RequestID: fmt.Sprint(r.IntN(30)), CallID: id, Source: "capture",
				ArgsHash: uint64(1 + r.IntN(3)), ArgKeys: []string{}, ArgValues: []string{},
				HasResponse: 1, ContentBlocks: 1, TaxonomyVersion: "test", IngestedMs: 1,
			}
			c.ArgsJSON = fmt.Sprintf(`{"v":%d}`, c.ArgsHash)
			c.SessionKey = c.SessionID
			if sessionless {
				c.SessionID, c.SessionKey = "", fmt.Sprintf("call:%016x", id)
			}
			if i > 0 && r.IntN(100) < 7 {
				c.Continuation = 1
			}
			classifyRandomly(&c, failPct)
			calls = append(calls, c)
			switch n := r.IntN(100); {
			case n < 2: // replayed in the same insert, unchanged
				calls = append(calls, c)
			case n < 5: // replayed later, unchanged
				replays = append(replays, c)
			case n < 8: // re-ingested later with a new classification
				d := c
				d.IngestedMs = 2 + int64(r.IntN(3))
				classifyRandomly(&d, failPct)
				replays = append(replays, d)
			}
		}
	}
	return calls, replays
}

// TestRetryAnalyticsMatchReference runs the three queries (by tool, by
// pair, and retry outcomes and recalls by client) on random traffic
// on every engine and compares them, row for row, with the reference
// implementation, over ranges, filters, windows and minimums chosen so that
// chains cross both ends of the range and the chain horizon.
func TestRetryAnalyticsMatchReference(t *testing.T) {
	ctx := context.Background()
	calls, replays := genTraffic(20261129, 3000, t0, 3*time.Hour)
	all := append(append([]pipeline.Call{}, calls...), replays...)
	type diffCase struct {
		f         queries.Filter
		window    time.Duration
		minChains int64
	}
	h := func(d time.Duration) time.Time { return t0.Add(d) }
	cases := []diffCase{
		{queries.Filter{From: h(time.Hour), To: h(2 * time.Hour)}, time.Minute, 1},
		{queries.Filter{From: h(time.Hour), To: h(2 * time.Hour)}, 5 * time.Second, 20},
		{queries.Filter{From: h(0), To: h(4 * time.Hour)}, 5 * time.Second, 5},
		{queries.Filter{From: h(30 * time.Minute), To: h(150 * time.Minute), Tenant: "acme"}, time.Second, 1},
		{queries.Filter{From: h(time.Hour), To: h(2 * time.Hour), Server: "crm", Tool: "search"}, time.Minute, 1},
		{queries.Filter{From: h(time.Hour + 500*time.Millisecond), To: h(80*time.Minute + 1500*time.Millisecond)}, 5 * time.Second, 1},
	}
	type answers struct {
		outcomes []queries.RetryOutcome
		recalls  []queries.Recall
		mis      []queries.Misclassification
	}
	defs, nonIdempotent := chtest.FleetDefinitions(t0)
	want := make([]answers, len(cases))
	rows, risky := 0, 0
	for i, c := range cases {
		want[i] = answers{refRetryOutcomes(all, c.f, c.window), refRecalls(all, c.f, c.window),
			refMisclassifications(all, c.f, c.window, c.minChains, nonIdempotent(c.f.To))}
		rows += len(want[i].outcomes) + len(want[i].recalls) + len(want[i].mis)
		for _, m := range want[i].mis {
			if m.Kind == queries.KindRetriedNonIdempotent {
				risky++
			}
		}
	}
	if rows < 300 || risky < 10 {
		t.Fatalf("the reference gives only %d rows, %d retried_non_idempotent; the generated traffic is too thin to test much", rows, risky)
	}
	// With ByPair every case is asked once for all pairs (the gauges' form):
	// its rows must be, pair by pair, the reference's for the case with
	// Tenant and Server set to that pair.
	wantByPair := make([]answers, len(cases))
	for i, c := range cases {
		for _, tenant := range []string{"acme", "globex", "initech"} {
			for _, server := range []string{"crm", "kb"} {
				if c.f.Tenant != "" && c.f.Tenant != tenant || c.f.Server != "" && c.f.Server != server {
					continue
				}
				pf := c.f
				pf.Tenant, pf.Server = tenant, server
				w := &wantByPair[i]
				for _, o := range refRetryOutcomes(all, pf, c.window) {
					o.Tenant, o.Server = tenant, server
					w.outcomes = append(w.outcomes, o)
				}
				for _, r := range refRecalls(all, pf, c.window) {
					r.Tenant, r.Server = tenant, server
					w.recalls = append(w.recalls, r)
				}
				for _, m := range refMisclassifications(all, pf, c.window, c.minChains, nonIdempotent(c.f.To)) {
					m.Tenant, m.Server = tenant, server
					w.mis = append(w.mis, m)
				}
			}
		}
		slices.SortStableFunc(wantByPair[i].mis, func(a, b queries.Misclassification) int { return cmp.Compare(a.Kind, b.Kind) })
	}
	if n, all := len(wantByPair[0].outcomes), len(want[0].outcomes); n <= all {
		t.Fatalf("the first case has %d retry outcome rows by pair against %d for all pairs; want the pairs to split them", n, all)
	}
	// With ByClient the recalls and retry outcomes are per client as well.
	wantByClient := make([][]queries.Recall, len(cases))
	wantOutcomesByClient := make([][]queries.RetryOutcome, len(cases))
	for i, c := range cases {
		cf := c.f
		cf.ByClient = true
		wantByClient[i] = refRecalls(all, cf, c.window)
		wantOutcomesByClient[i] = refRetryOutcomes(all, cf, c.window)
	}
	if n, all := len(wantByClient[0]), len(want[0].recalls); n <= all {
		t.Fatalf("the first case has %d recall rows by client against %d for all clients; want the clients to split them", n, all)
	}
	if n, all := len(wantOutcomesByClient[0]), len(want[0].outcomes); n <= all {
		t.Fatalf("the first case has %d retry outcome rows by client against %d for all clients; want the clients to split them", n, all)
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, calls)
			e.Insert(t, replays)
			e.InsertTools(t, defs)
			for i, c := range cases {
				name := fmt.Sprintf("[%s, %s) tenant=%q server=%q tool=%q window=%s min_chains=%d",
					c.f.From.Format("15:04:05.000"), c.f.To.Format("15:04:05.000"), c.f.Tenant, c.f.Server, c.f.Tool, c.window, c.minChains)
				outcomes, err := queries.RetryOutcomes(ctx, e.DB, c.f, c.window)
				if err != nil {
					t.Fatal(err)
				}
				if !equalRows(outcomes, want[i].outcomes) {
					t.Errorf("retry outcomes %s: SQL and reference differ\n got %s\nwant %s", name, dump(outcomes), dump(want[i].outcomes))
				}
				recalls, err := queries.Recalls(ctx, e.DB, c.f, c.window)
				if err != nil {
					t.Fatal(err)
				}
				if !equalRows(recalls, want[i].recalls) {
					t.Errorf("recalls %s: SQL and reference differ\n got %s\nwant %s", name, dump(recalls), dump(want[i].recalls))
				}
				mis, err := queries.Misclassifications(ctx, e.DB, c.f, c.window, c.minChains)
				if err != nil {
					t.Fatal(err)
				}
				if !equalRows(mis, want[i].mis) {
					t.Errorf("misclassifications %s: SQL and reference differ\n got %s\nwant %s", name, dump(mis), dump(want[i].mis))
				}

				bf := c.f
				bf.ByPair = true
				outcomes, err = queries.RetryOutcomes(ctx, e.DB, bf, c.window)
				if err != nil {
					t.Fatal(err)
				}
				if !equalRows(outcomes, wantByPair[i].outcomes) {
					t.Errorf("retry outcomes by pair %s: SQL and reference differ\n got %s\nwant %s", name, dump(outcomes), dump(wantByPair[i].outcomes))
				}
				recalls, err = queries.Recalls(ctx, e.DB, bf, c.window)
				if err != nil {
					t.Fatal(err)
				}
				if !equalRows(recalls, wantByPair[i].recalls) {
					t.Errorf("recalls by pair %s: SQL and reference differ\n got %s\nwant %s", name, dump(recalls), dump(wantByPair[i].recalls))
				}
				mis, err = queries.Misclassifications(ctx, e.DB, bf, c.window, c.minChains)
				if err != nil {
					t.Fatal(err)
				}
				if !equalRows(mis, wantByPair[i].mis) {
					t.Errorf("misclassifications by pair %s: SQL and reference differ\n got %s\nwant %s", name, dump(mis), dump(wantByPair[i].mis))
				}

				cf := c.f
				cf.ByClient = true
				recalls, err = queries.Recalls(ctx, e.DB, cf, c.window)
				if err != nil {
					t.Fatal(err)
				}
				if !equalRows(recalls, wantByClient[i]) {
					t.Errorf("recalls by client %s: SQL and reference differ\n got %s\nwant %s", name, dump(recalls), dump(wantByClient[i]))
				}
				outcomes, err = queries.RetryOutcomes(ctx, e.DB, cf, c.window)
				if err != nil {
					t.Fatal(err)
				}
				if !equalRows(outcomes, wantOutcomesByClient[i]) {
					t.Errorf("retry outcomes by client %s: SQL and reference differ\n got %s\nwant %s", name, dump(outcomes), dump(wantOutcomesByClient[i]))
				}
			}
		})
	}
}
