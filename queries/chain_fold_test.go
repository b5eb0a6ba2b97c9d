package queries_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/queries"
)

// TestChainQueriesReadTheChainFolds runs retry outcomes and re-calls (by
// tool, and by client), misclassifications and retry loops on random traffic whose hours the retention job has
// folded (compact.RollupChains, and compact.RollupHours for the misflagged
// rows' calls_flags_folded), on every engine, and compares them row for
// row with the reference implementation: with the chains and failures of the
// folded hours from their folds and the others from the raw calls (the default window),
// and from the raw calls alone (another window). The traffic is replayed
// into hours already folded, which sends them back to the raw calls, then
// folded again, and a late call leaves one hour unfolded between folded
// ones. Last, the fold's rows are emptied while its records stay: some
// answer of each query with the default window must change (each read the
// folds), and none with the other window; and the flags fold's rows doubled
// must change a misflagged row.
func TestChainQueriesReadTheChainFolds(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	// The job folds only hours whose last insert is settled by the server's
	// clock, so the traffic lies in the hours before now.
	start := now.Truncate(time.Hour).Add(-6 * time.Hour)
	calls, replays := genTraffic(20261205, 600, start, 3*time.Hour)
	// Its long retry loops leave a chain open in every hour, so the sessions
	// that last over 50 minutes are left out: the one storm below is open.
	first, last := map[string]int64{}, map[string]int64{}
	for _, c := range calls {
		if f, ok := first[c.SessionKey]; !ok || c.TimeMs < f {
			first[c.SessionKey] = c.TimeMs
		}
		last[c.SessionKey] = max(last[c.SessionKey], c.TimeMs)
	}
	short := func(c pipeline.Call) bool { return last[c.SessionKey]-first[c.SessionKey] > 50*60_000 }
	calls, replays = slices.DeleteFunc(calls, short), slices.DeleteFunc(replays, short)
	// A storm that starts at 1:55 and retries every 50 s until 2:19:10,
	// past 2:10, where the fold of 1:00 stops reading: that fold is open,
	// and the queries read the hour raw.
	for i := range 30 {
		c := call{session: "storm", tool: "search", req: fmt.Sprint(i), category: classify.RateLimited, declared: 1}.row()
		at := start.Add(115*time.Minute + time.Duration(i)*50*time.Second)
		c.Time, c.TimeMs, c.CallID = at, at.UnixMilli(), hashString(fmt.Sprint("storm|", i))
		calls = append(calls, c)
	}
	defs, nonIdempotent := chtest.FleetDefinitions(start)
	h := func(d time.Duration) time.Time { return start.Add(d) }
	type foldCase struct {
		f         queries.Filter
		window    time.Duration
		minChains int64
	}
	cases := []foldCase{
		{queries.Filter{From: h(0), To: h(4 * time.Hour)}, time.Minute, 1},
		{queries.Filter{From: h(time.Hour), To: h(2 * time.Hour)}, time.Minute, 1},
		{queries.Filter{From: h(30*time.Minute + 500*time.Millisecond), To: h(150*time.Minute + 1500*time.Millisecond)}, time.Minute, 2},
		{queries.Filter{From: h(-time.Hour), To: h(3*time.Hour - time.Millisecond), Tenant: "acme"}, time.Minute, 1},
		{queries.Filter{From: h(time.Hour), To: h(3 * time.Hour), Server: "crm", Tool: "search"}, time.Minute, 1},
		// Two days and more, so that the misflagged rows ask for their
		// flags bound (it can only skip the days between).
		{queries.Filter{From: h(0), To: h(50 * time.Hour)}, time.Minute, 1},
		{queries.Filter{From: h(0), To: h(4 * time.Hour)}, 5 * time.Second, 1},
		{queries.Filter{From: h(30 * time.Minute), To: h(150 * time.Minute)}, 5 * time.Second, 1},
	}
	type answers struct {
		outcomes   []queries.RetryOutcome
		outcomesBy []queries.RetryOutcome // by client
		mis        []queries.Misclassification
		recalls    []queries.Recall
		byClient   []queries.Recall
		loops      []queries.RetryLoop
	}
	// Every chain of 3 calls or more, in the order of the endpoint.
	loopOptions := queries.RetryLoopsOptions{MinAttempts: 3, Limit: queries.MaxRetryLoopsLimit}
	// A late call into 08:00, once everything is folded: the hours on
	// either side stay folded, 08:00 and its chains are read raw.
	late := call{session: "late", tool: "fetch", req: "late", category: classify.Unavailable, declared: 1}.row()
	late.Time, late.TimeMs, late.CallID, late.Misflagged = h(95*time.Minute), h(95*time.Minute).UnixMilli(), hashString("late"), 1
	reference := func(rows int, extra ...pipeline.Call) []answers {
		all := append(append(calls[:len(calls):len(calls)], replays[:rows]...), extra...)
		want := make([]answers, len(cases))
		for i, c := range cases {
			cf := c.f
			cf.ByClient = true
			want[i] = answers{refRetryOutcomes(all, c.f, c.window), refRetryOutcomes(all, cf, c.window),
				refMisclassifications(all, c.f, c.window, c.minChains, nonIdempotent(c.f.To)),
				refRecalls(all, c.f, c.window), refRecalls(all, cf, c.window), refRetryLoops(all, c.f, c.window, loopOptions)}
		}
		return want
	}
	name := func(c foldCase) string {
		return fmt.Sprintf("[%s, %s) tenant=%q server=%q tool=%q window=%s",
			c.f.From.Format("15:04:05.000"), c.f.To.Format("15:04:05.000"), c.f.Tenant, c.f.Server, c.f.Tool, c.window)
	}
	// ask returns the chain queries' answers to c on e.
	ask := func(t *testing.T, e *chtest.Engine, c foldCase) answers {
		t.Helper()
		var a answers
		var err error
		if a.outcomes, err = queries.RetryOutcomes(ctx, e.DB, c.f, c.window); err != nil {
			t.Fatal(err)
		}
		if a.mis, err = queries.Misclassifications(ctx, e.DB, c.f, c.window, c.minChains); err != nil {
			t.Fatal(err)
		}
		if a.recalls, err = queries.Recalls(ctx, e.DB, c.f, c.window); err != nil {
			t.Fatal(err)
		}
		cf := c.f
		cf.ByClient = true
		if a.byClient, err = queries.Recalls(ctx, e.DB, cf, c.window); err != nil {
			t.Fatal(err)
		}
		if a.outcomesBy, err = queries.RetryOutcomes(ctx, e.DB, cf, c.window); err != nil {
			t.Fatal(err)
		}
		if a.loops, err = queries.RetryLoops(ctx, e.DB, c.f, c.window, loopOptions); err != nil {
			t.Fatal(err)
		}
		return a
	}
	// check fails the test for each case that differs from want.
	check := func(t *testing.T, e *chtest.Engine, step string, want []answers) {
		t.Helper()
		for i, c := range cases {
			a := ask(t, e, c)
			if !equalRows(a.outcomes, want[i].outcomes) || !equalRows(a.outcomesBy, want[i].outcomesBy) || !equalRows(a.mis, want[i].mis) ||
				!equalRows(a.recalls, want[i].recalls) || !equalRows(a.byClient, want[i].byClient) || !equalRows(a.loops, want[i].loops) {
				t.Errorf("%s, %s: SQL and reference differ\n got %s\n     %s\n     %s\n     %s\n     %s\n     %s\nwant %s\n     %s\n     %s\n     %s\n     %s\n     %s", step, name(c),
					dump(a.outcomes), dump(a.outcomesBy), dump(a.mis), dump(a.recalls), dump(a.byClient), dump(a.loops),
					dump(want[i].outcomes), dump(want[i].outcomesBy), dump(want[i].mis), dump(want[i].recalls), dump(want[i].byClient), dump(want[i].loops))
			}
			if i == 0 || i == 5 {
				checkByPair(t, e, step+", "+name(c), c.f, c.window, c.minChains)
			}
		}
	}
	fold := func(t *testing.T, e *chtest.Engine) compact.ChainResult {
		t.Helper()
		// now after the inserts: an hour is settled once its last insert,
		// by the server's clock, is settle (0) before now.
		if _, err := compact.RollupHours(ctx, e.DB, time.Now(), 12*time.Hour, 0); err != nil {
			t.Fatal(err)
		}
		res, err := compact.RollupChains(ctx, e.DB, time.Now(), 12*time.Hour, 0)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	wantFirst, wantAll, wantLate := reference(0), reference(len(replays)), reference(len(replays), late)
	outcomes, mis, loops := 0, 0, 0
	clients := map[string]bool{}
	for _, w := range wantAll {
		outcomes, mis, loops = outcomes+len(w.outcomes), mis+len(w.mis), loops+len(w.loops)
		for _, o := range w.outcomesBy {
			clients[o.Client] = true
		}
	}
	if outcomes < 200 || mis < 20 || loops < 50 || len(clients) < 3 {
		t.Fatalf("the reference gives only %d retry outcome rows, %d misclassifications, %d retry loops and %d clients; the traffic is too thin to test much",
			outcomes, mis, loops, len(clients))
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, calls)
			e.InsertTools(t, defs)
			res := fold(t, e)
			read := len(res.Folded) - len(res.Open)
			if read < 3 || len(res.Open) == 0 {
				t.Fatalf("folded %d hours (%v), %d of them open; want at least 3 to read and an open one, which the chain queries read raw", len(res.Folded), res.Folded, len(res.Open))
			}
			check(t, e, "folded", wantFirst)

			e.Insert(t, replays)
			check(t, e, "replayed into folded hours", wantAll)
			if res := fold(t, e); len(res.Folded) == 0 {
				t.Fatal("folded nothing after the replays")
			}
			check(t, e, "folded again", wantAll)

			e.Insert(t, []pipeline.Call{late})
			check(t, e, "a late call into a folded hour", wantLate)
			if res := fold(t, e); len(res.Folded) == 0 {
				t.Fatal("folded nothing after the late call")
			}
			check(t, e, "its hour folded again", wantLate)

			for _, table := range []string{"chains_folded", "recalls_folded"} {
				if err := e.DB.Exec(ctx, "TRUNCATE TABLE "+table); err != nil {
					t.Fatal(err)
				}
			}
			// Each query must read the fold: some answer of each with the
			// default window changes, and none with another window.
			changedBy := map[string]int{}
			for i, c := range cases {
				a := ask(t, e, c)
				for query, differs := range map[string]bool{
					"retry outcomes":           !equalRows(a.outcomes, wantLate[i].outcomes),
					"retry outcomes by client": !equalRows(a.outcomesBy, wantLate[i].outcomesBy),
					"misclassifications":       !equalRows(a.mis, wantLate[i].mis),
					"re-calls":                 !equalRows(a.recalls, wantLate[i].recalls) || !equalRows(a.byClient, wantLate[i].byClient),
					"retry loops":              !equalRows(a.loops, wantLate[i].loops),
				} {
					switch {
					case differs && c.window != queries.FoldedChainWindow:
						t.Errorf("%s: %s changed with the folds' rows emptied; only the window %s reads them", name(c), query, queries.FoldedChainWindow)
					case differs:
						changedBy[query]++
					}
				}
			}
			for _, query := range []string{"retry outcomes", "retry outcomes by client", "misclassifications", "re-calls", "retry loops"} {
				if changedBy[query] == 0 {
					t.Errorf("no %s answer with the default window changed when the folds' rows were emptied: the query does not read them", query)
				}
			}

			// The misflagged rows count the whole hours from their fold
			// (calls_flags_folded): with its rows doubled, some must change.
			if err := e.DB.Exec(ctx, "INSERT INTO calls_flags_folded SELECT * FROM calls_flags_folded WHERE calls > 0"); err != nil {
				t.Fatal(err)
			}
			misflagged := func(rows []queries.Misclassification) []queries.Misclassification {
				return slices.DeleteFunc(slices.Clone(rows), func(m queries.Misclassification) bool { return m.Kind != queries.KindMisflagged })
			}
			changed := 0
			for i, c := range cases {
				mis, err := queries.Misclassifications(ctx, e.DB, c.f, c.window, c.minChains)
				if err != nil {
					t.Fatal(err)
				}
				if !equalRows(misflagged(mis), misflagged(wantLate[i].mis)) {
					changed++
				}
			}
			if changed == 0 {
				t.Error("no misflagged row changed when the flags fold's rows were doubled: the misflagged query does not read the fold")
			}
		})
	}
}

// checkByPair asks f's chain analytics once with ByPair and requires, for
// each pair of the generated traffic, the rows of that pair to be what the
// same call with Tenant and Server set to it returns: the gauges' form over
// folded chains, folded flags and raw calls alike.
func checkByPair(t *testing.T, e *chtest.Engine, step string, f queries.Filter, window time.Duration, minChains int64) {
	t.Helper()
	ctx := context.Background()
	bf := f
	bf.ByPair = true
	outcomes, err := queries.RetryOutcomes(ctx, e.DB, bf, window)
	if err != nil {
		t.Fatal(err)
	}
	mis, err := queries.Misclassifications(ctx, e.DB, bf, window, minChains)
	if err != nil {
		t.Fatal(err)
	}
	var wantOutcomes []queries.RetryOutcome
	var wantMis []queries.Misclassification
	for _, tenant := range []string{"acme", "globex", "initech"} {
		for _, server := range []string{"crm", "kb"} {
			pf := f
			pf.Tenant, pf.Server = tenant, server
			o, err := queries.RetryOutcomes(ctx, e.DB, pf, window)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range o {
				r.Tenant, r.Server = tenant, server
				wantOutcomes = append(wantOutcomes, r)
			}
			m, err := queries.Misclassifications(ctx, e.DB, pf, window, minChains)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range m {
				r.Tenant, r.Server = tenant, server
				wantMis = append(wantMis, r)
			}
		}
	}
	slices.SortStableFunc(wantMis, func(a, b queries.Misclassification) int { return cmp.Compare(a.Kind, b.Kind) })
	if len(wantOutcomes) == 0 || len(wantMis) == 0 {
		t.Fatalf("%s: the pairs have %d retry outcome and %d misclassification rows; want some of each", step, len(wantOutcomes), len(wantMis))
	}
	if !equalRows(outcomes, wantOutcomes) || !equalRows(mis, wantMis) {
		t.Errorf("%s: by pair and pair by pair differ\n got %s\n     %s\nwant %s\n     %s", step,
			dump(outcomes), dump(mis), dump(wantOutcomes), dump(wantMis))
	}
}
