package queries_test

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
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
// allow-list and limits that cut the list: from the raw calls, then with
// the hours folded (compact.RollupHours), where the ranges over three UTC
// days read the folded hours from calls_flags_folded and sessions_folded,
// after a late reclassification into a folded hour (read raw until it is
// folded again), with folds made before their rows counted failures and
// before the session keys were folded (read raw), and folded again. Last,
// the flags fold's rows doubled must change the ranges over three days and
// no other (the ranges within two days read the raw form), and so must the
// folded session keys made one.
func TestOverviewMatchesReference(t *testing.T) {
	ctx := context.Background()
	calls, replays := genTraffic(20261201, 2000, t0, 3*time.Hour)
	// Calls two days before, so that the hours between are quiet hours the
	// job folds as empty, and a range from them skips a whole UTC day.
	early, _ := genTraffic(20261207, 100, t0.Add(-49*time.Hour), time.Hour)
	h := func(d time.Duration) time.Time { return t0.Add(d) }
	type overviewCase struct {
		f     queries.Filter
		limit int
	}
	cases := []overviewCase{
		{queries.Filter{From: h(0), To: h(3 * time.Hour)}, 100},
		{queries.Filter{From: h(time.Hour), To: h(2 * time.Hour)}, 2},
		{queries.Filter{From: h(30 * time.Minute), To: h(150 * time.Minute), Tenant: "acme"}, 10},
		{queries.Filter{From: h(time.Hour), To: h(2 * time.Hour), Server: "crm", Tool: "search"}, 10},
		{queries.Filter{From: h(0), To: h(3 * time.Hour), Tenants: []string{"globex", "initech"}}, 3},
		{queries.Filter{From: h(time.Hour + 500*time.Millisecond), To: h(80*time.Minute + 1500*time.Millisecond)}, 10},
		// Over three UTC days, but from an hour before the first folded
		// one (no call before it): no day to skip, the raw form.
		{queries.Filter{From: h(-50 * time.Hour), To: h(3 * time.Hour), Server: "kb", Tenants: []string{"globex", "initech"}}, 3},
	}
	// Over three UTC days: the folded form once the hours are folded.
	wide := []overviewCase{
		{queries.Filter{From: h(-49 * time.Hour), To: h(3 * time.Hour)}, 100},
		{queries.Filter{From: h(-49*time.Hour + 17*time.Minute + 250*time.Millisecond), To: h(2*time.Hour + 37*time.Minute + time.Millisecond), Tenant: "acme"}, 10},
		{queries.Filter{From: h(-49 * time.Hour), To: h(3 * time.Hour), Server: "kb", Tenants: []string{"globex", "initech"}}, 3},
		{queries.Filter{From: h(-49 * time.Hour), To: h(150 * time.Minute), Tool: "search"}, 10},
	}
	name := func(c overviewCase) string {
		return fmt.Sprintf("[%s, %s) tenant=%q server=%q tool=%q tenants=%q limit=%d",
			c.f.From.Format("01-02 15:04:05.000"), c.f.To.Format("01-02 15:04:05.000"), c.f.Tenant, c.f.Server, c.f.Tool, c.f.Tenants, c.limit)
	}
	type answer struct {
		totals queries.Totals
		top    []queries.ToolFailures
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			all := slices.Concat(calls, replays, early)
			e.Insert(t, calls)
			e.Insert(t, replays)
			e.Insert(t, early)
			check := func(state string) map[string]answer {
				got := map[string]answer{}
				for _, c := range slices.Concat(cases, wide) {
					wantTotals, wantTop := refOverview(all, c.f, c.limit)
					if wantTotals.Empty == 0 || wantTotals.Misflagged == 0 || len(wantTop) == 0 {
						t.Fatalf("%s: the reference has no empty results, misflagged calls or failing tools: %+v", name(c), wantTotals)
					}
					totals, top, err := queries.Overview(ctx, e.DB, c.f, c.limit)
					if err != nil {
						t.Fatal(err)
					}
					if totals != wantTotals {
						t.Errorf("%s, %s: totals\n got %+v\nwant %+v", state, name(c), totals, wantTotals)
					}
					if !equalRows(top, wantTop) {
						t.Errorf("%s, %s: top failing tools\n got %s\nwant %s", state, name(c), dump(top), dump(wantTop))
					}
					got[name(c)] = answer{totals, top}
				}
				return got
			}
			fold := func() {
				t.Helper()
				if _, err := compact.RollupHours(ctx, e.DB, time.Now(), time.Since(t0)+30*24*time.Hour, 0); err != nil {
					t.Fatal(err)
				}
			}
			exec := func(qs ...string) {
				t.Helper()
				for _, q := range qs {
					if err := e.DB.Exec(ctx, q); err != nil {
						t.Fatal(err)
					}
				}
			}
			check("raw")
			fold()
			check("folded")
			// A late reclassification of some calls of 11:00: that hour is
			// read raw, the folded hours after it from their fold.
			var late []pipeline.Call
			for _, c := range calls {
				if c.Time.Hour() == 11 && len(late) < 40 {
					c.IngestedMs += 100
					c.Category, c.IsFailure, c.Misflagged = string(classify.EmptyResult), 0, 1
					late = append(late, c)
				}
			}
			e.Insert(t, late)
			all = append(all, late...)
			check("late call into a folded hour")
			fold()
			check("folded again")
			// The folds of t0's day as schema/042 left them: rows and marks
			// without failures, and no session keys (043 came later), which
			// the overview must not read (the earlier hours' folds let it
			// skip 11-28 and read the fold).
			day := t0.Truncate(24 * time.Hour).Unix()
			withoutSessions := []string{
				`CREATE TABLE sessions_before_043 ENGINE = Memory AS SELECT hour, fold, CAST(tenant AS String) AS tenant, CAST(server AS String) AS server,
				session_key, tools, calls FROM sessions_folded`,
				"TRUNCATE TABLE sessions_folded",
				fmt.Sprintf(`INSERT INTO sessions_folded (hour, fold, tenant, server, session_key, tools, calls)
				SELECT hour, fold, tenant, server, session_key, tools, calls FROM sessions_before_043 WHERE toUInt32(hour) < %d`, day),
				"DROP TABLE sessions_before_043",
			}
			exec(`CREATE TABLE flags_before_042 ENGINE = Memory AS SELECT hour, fold, CAST(tenant AS String) AS tenant, CAST(server AS String) AS server,
				CAST(tool AS String) AS tool, CAST(category AS String) AS category, calls, misflagged, failures FROM calls_flags_folded`,
				"TRUNCATE TABLE calls_flags_folded",
				fmt.Sprintf(`INSERT INTO calls_flags_folded (hour, fold, tenant, server, tool, category, calls, misflagged, failures)
				SELECT hour, fold, tenant, server, tool, category, calls, misflagged, if(toUInt32(hour) >= %d, toUInt64(0), failures) FROM flags_before_042`, day),
				"DROP TABLE flags_before_042")
			exec(withoutSessions...)
			check("folds before 042")
			fold()
			check("refolded")
			// The folds of t0's day as schema/043 left them: the session
			// keys missing, the counts with their failures.
			exec(withoutSessions...)
			check("folds before 043")
			fold()
			before := check("refolded again")
			// Which form each range ran: the folds' rows are read over three
			// UTC days only. With the flags fold's rows doubled the counts
			// change, with the folded session keys made one the sessions.
			for _, alter := range []struct {
				what     string
				sessions bool // compare the sessions only
				stmts    []string
			}{
				{"the flags fold's rows were doubled", false, []string{"INSERT INTO calls_flags_folded SELECT * FROM calls_flags_folded WHERE calls > 0"}},
				{"the folded session keys were made one", true, []string{
					`CREATE TABLE sessions_one ENGINE = Memory AS SELECT hour, fold, CAST(tenant AS String) AS tenant, CAST(server AS String) AS server,
					if(calls > 0, 'one', session_key) AS session_key, tools, calls FROM sessions_folded`,
					"TRUNCATE TABLE sessions_folded",
					"INSERT INTO sessions_folded (hour, fold, tenant, server, session_key, tools, calls) SELECT * FROM sessions_one",
					"DROP TABLE sessions_one"}},
			} {
				exec(alter.stmts...)
				for i, c := range slices.Concat(cases, wide) {
					totals, top, err := queries.Overview(ctx, e.DB, c.f, c.limit)
					if err != nil {
						t.Fatal(err)
					}
					b := before[name(c)]
					changed := !reflect.DeepEqual(answer{totals, top}, b)
					if alter.sessions {
						changed = totals.Sessions != b.totals.Sessions
					}
					if isWide := i >= len(cases); changed != isWide {
						t.Errorf("%s: changed %v when %s, want %v (the folds read over three UTC days only)", name(c), changed, alter.what, isWide)
					}
					before[name(c)] = answer{totals, top}
				}
			}
		})
	}
}
