package queries_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/traffic"
)

// sampleCalls decodes and classifies generated traffic, as ingest does.
func sampleCalls(t testing.TB, sessions int) []pipeline.Call {
	t.Helper()
	p := &pipeline.Processor{Classifier: classify.Default()}
	var calls []pipeline.Call
	err := traffic.Generate(traffic.Config{Seed: 7, Sessions: sessions}, func(line []byte) error {
		c, err := p.Line(line)
		if err != nil {
			return err
		}
		calls = append(calls, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return calls
}

// allAnswers runs every analytic over f.
func allAnswers(t *testing.T, db queries.DB, f queries.Filter) map[string]any {
	t.Helper()
	ctx := context.Background()
	out := map[string]any{}
	check := func(name string, v any, err error) {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = v
	}
	v1, err := queries.FailureRatesFrom(ctx, db, f, time.Hour, false)
	check("failure-rates", v1, err)
	v2, err := queries.FailureRatesFrom(ctx, db, f, time.Hour, true)
	check("failure-rates-rollup", v2, err)
	v3, err := queries.EmptyResults(ctx, db, f, queries.EmptyResultsOptions{Limit: 1000})
	check("empty-results", v3, err)
	// The same over a range whose edges cut hours: their re-ingested
	// copies are looked up in their hours' folds too.
	v12, err := queries.EmptyResults(ctx, db, offGrid(f), queries.EmptyResultsOptions{Limit: 1000})
	check("empty-results-off-grid", v12, err)
	v4, err := queries.InvalidArgumentSpikes(ctx, db, f, queries.SpikeOptions{MinCalls: 2})
	check("spikes", v4, err)
	// The same with a baseline before the range, read from the rollup, and
	// from the raw calls.
	late := queries.Filter{From: f.From.Add(2 * time.Hour), To: f.To}
	v10, err := queries.InvalidArgumentSpikesFrom(ctx, db, late, queries.SpikeOptions{MinCalls: 2}, true)
	check("spikes-rollup-baseline", v10, err)
	v11, err := queries.InvalidArgumentSpikesFrom(ctx, db, late, queries.SpikeOptions{MinCalls: 2}, false)
	check("spikes-raw-baseline", v11, err)
	v5, v6, err := queries.Overview(ctx, db, f, 100)
	check("overview", v5, err)
	check("top-failing-tools", v6, err)
	v7, err := queries.RetryOutcomes(ctx, db, f, time.Minute)
	check("retry-outcomes", v7, err)
	v8, err := queries.Recalls(ctx, db, f, time.Minute)
	check("recalls", v8, err)
	v9, err := queries.Misclassifications(ctx, db, f, time.Minute, 1)
	check("misclassifications", v9, err)
	v13, err := queries.RetryLoops(ctx, db, f, time.Minute, queries.RetryLoopsOptions{MinAttempts: 2, Limit: 1000})
	check("retry-loops", v13, err)
	return out
}

// offGrid is the part of f (an hour-aligned range of 4 hours or more)
// from 17 minutes into its first hour to 37 minutes into its third: off
// the hour grid and the second, and cutting hours that hold calls.
func offGrid(f queries.Filter) queries.Filter {
	return queries.Filter{From: f.From.Add(17*time.Minute + 250*time.Millisecond), To: f.From.Add(2*time.Hour + 37*time.Minute + 1*time.Millisecond)}
}

// TestEveryAnalyticCountsAReplayedCallOnce ingests realistic traffic, then
// ingests all of it again (a client resending after a timeout, a replayed
// file): every analytic must give the same answer, before and after merges.
func TestEveryAnalyticCountsAReplayedCallOnce(t *testing.T) {
	calls := sampleCalls(t, 150)
	f := queries.Filter{From: traffic.DefaultStart, To: traffic.DefaultStart.Add(5 * time.Hour)}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, calls)
			once := allAnswers(t, e.DB, f)
			if o := once["overview"].(queries.Totals); o.Calls != uint64(len(calls)) || o.Failures == 0 {
				t.Fatalf("overview after one ingest: %+v for %d calls", o, len(calls))
			}
			if len(once["retry-outcomes"].([]queries.RetryOutcome)) == 0 || len(once["retry-loops"].([]queries.RetryLoop)) == 0 {
				t.Fatal("the sample has no retry chains, or none retried; the test would prove nothing")
			}
			replay := append([]pipeline.Call(nil), calls...)
			for i := range replay {
				replay[i].IngestedMs++
			}
			e.Insert(t, replay)
			if !reflect.DeepEqual(once["spikes-rollup-baseline"], once["spikes-raw-baseline"]) {
				t.Errorf("spikes with the baseline from the rollup differ from the raw form:\nrollup %+v\n   raw %+v", once["spikes-rollup-baseline"], once["spikes-raw-baseline"])
			}
			if len(once["spikes-raw-baseline"].([]queries.Spike)) == 0 {
				t.Error("no spikes after the baseline hours; the rollup baseline is not tested")
			}
			twice := allAnswers(t, e.DB, f)
			for name := range once {
				if !reflect.DeepEqual(once[name], twice[name]) {
					t.Errorf("%s changed after a replay:\n once %+v\ntwice %+v", name, once[name], twice[name])
				}
			}
			if err := e.DB.Exec(context.Background(), "OPTIMIZE TABLE calls FINAL"); err != nil {
				t.Fatal(err)
			}
			merged := allAnswers(t, e.DB, f)
			for name := range once {
				if !reflect.DeepEqual(once[name], merged[name]) {
					t.Errorf("%s changed after the merge:\n once %+v\nmerged %+v", name, once[name], merged[name])
				}
			}
		})
	}
}

// TestEveryAnalyticKeepsTheLatestIngest re-ingests a third of realistic
// traffic with a new classification (a rules change) and a later
// IngestedMs. Before any merge, every analytic that reads the raw calls must
// answer as it does once OPTIMIZE FINAL has dropped the replaced copies:
// the latest ingest of a call wins. So must they once the hours are folded
// (the copied call ids read from the folds), after a third ingest of the
// first two hours' failed calls, whose folds it makes stale (those hours'
// copies found among the raw calls, the others' in the folds), and then
// with folds that list no copies, as those made before calls_copies_folded
// and calls_latest_folded existed (every hour's copies found among the raw
// calls). The latest ingest is inserted twice, too, as a spool replayed
// after a crash inserts it. The rollup is left out: it counts a
// reclassified call under both categories (schema/004_calls_5m.sql). The
// spikes whose baseline comes from the rollup stay the same before and
// after the merge (the rollup does not change), but their baseline is not
// the latest ingest's: a reclassified call counts as INVALID_ARGUMENT there
// if any of its ingests was one. Against the raw form they must agree in
// everything but the baseline.
func TestEveryAnalyticKeepsTheLatestIngest(t *testing.T) {
	calls := sampleCalls(t, 150)
	f := queries.Filter{From: traffic.DefaultStart, To: traffic.DefaultStart.Add(5 * time.Hour)}
	var replay []pipeline.Call
	for i, c := range calls {
		if i%3 != 0 {
			continue
		}
		if c.IsFailure == 1 {
			c.Category, c.IsFailure, c.Misflagged = string(classify.OK), 0, 1-c.Misflagged
		} else {
			c.Category, c.IsFailure = string(classify.InvalidArgument), 1
		}
		c.ExpectedRetryable = classify.Category(c.Category).ExpectedRetryable()
		c.IngestedMs++
		replay = append(replay, c)
	}
	// A later reclassification of the calls of the range's first two
	// hours, back to what they were, once the hours are folded.
	var again []pipeline.Call
	for _, c := range calls {
		if c.Time.Before(f.From.Add(2*time.Hour)) && c.IsFailure == 1 {
			c.IngestedMs += 2
			again = append(again, c)
		}
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := context.Background()
			// The copies stay unmerged until OPTIMIZE, so that the folds
			// record them.
			e.StopMerges(t)
			e.Insert(t, calls)
			first := allAnswers(t, e.DB, f)
			e.Insert(t, replay)
			latest := allAnswers(t, e.DB, f)
			// The latest ingest inserted twice (a spool replayed after a
			// crash): its copies are the same call once more.
			e.Insert(t, replay)
			twice := allAnswers(t, e.DB, f)
			for name := range latest {
				if !reflect.DeepEqual(latest[name], twice[name]) {
					t.Errorf("%s with the latest ingest inserted twice differs from once:\n once %+v\ntwice %+v", name, latest[name], twice[name])
				}
			}
			// Every hour folded: the readers take the copied call ids of
			// the folds instead of grouping the raw call ids.
			res, err := compact.RollupHours(ctx, e.DB, time.Now(), time.Since(f.From)+48*time.Hour, 0)
			if err != nil || len(res.Folded) < 4 {
				t.Fatalf("fold: %v %v, want the range's hours folded", res, err)
			}
			var copied []struct {
				N     uint64 `ch:"n"`
				Marks uint64 `ch:"marks"`
			}
			if err := e.DB.Select(ctx, &copied, "SELECT countIf(call_id != 0) AS n, countIf(call_id = 0) AS marks FROM calls_copies_folded WHERE (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)"); err != nil {
				t.Fatal(err)
			}
			if copied[0].N != uint64(len(replay)) || copied[0].Marks != uint64(len(res.Folded)+len(res.Quiet)) {
				t.Fatalf("%d copied calls and %d marks in the current folds, want the %d replayed and one a fold (quiet hours too)", copied[0].N, copied[0].Marks, len(replay))
			}
			if err := e.DB.Select(ctx, &copied, "SELECT countIf(call_id != 0 AND copies = 2) AS n, countIf(call_id = 0) AS marks FROM calls_latest_folded WHERE (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)"); err != nil {
				t.Fatal(err)
			}
			if copied[0].N != uint64(len(replay)) || copied[0].Marks != uint64(len(res.Folded)+len(res.Quiet)) {
				t.Fatalf("%d latest ingests stored twice and %d marks in the current folds, want the %d replayed and one a fold (quiet hours too)", copied[0].N, copied[0].Marks, len(replay))
			}
			folded := allAnswers(t, e.DB, f)
			for name := range latest {
				if !reflect.DeepEqual(latest[name], folded[name]) {
					t.Errorf("%s with the hours folded differs from before:\nbefore %+v\nfolded %+v", name, latest[name], folded[name])
				}
			}
			// The first two hours' folds are no longer current: their
			// copies come from the raw calls, the others' from the folds.
			e.Insert(t, again)
			latest = allAnswers(t, e.DB, f)
			// Folds that list no copies, as those made before
			// calls_copies_folded and calls_latest_folded existed: their
			// hours are searched raw.
			for _, table := range []string{"calls_copies_folded", "calls_latest_folded"} {
				if err := e.DB.Exec(ctx, "TRUNCATE TABLE "+table); err != nil {
					t.Fatal(err)
				}
			}
			unlisted := allAnswers(t, e.DB, f)
			for name := range latest {
				if !reflect.DeepEqual(latest[name], unlisted[name]) {
					t.Errorf("%s with folds that list no copies differs from before:\nbefore %+v\n   now %+v", name, latest[name], unlisted[name])
				}
			}
			if err := e.DB.Exec(ctx, "SYSTEM START MERGES calls"); err != nil {
				t.Fatal(err)
			}
			if err := e.DB.Exec(ctx, "OPTIMIZE TABLE calls FINAL"); err != nil {
				t.Fatal(err)
			}
			merged := allAnswers(t, e.DB, f)
			rb, raw := latest["spikes-rollup-baseline"].([]queries.Spike), merged["spikes-raw-baseline"].([]queries.Spike)
			for _, r := range raw {
				for _, b := range rb {
					if b.Tool == r.Tool && b.Time.Equal(r.Time) && (b.Calls != r.Calls || b.Invalid != r.Invalid || b.Share != r.Share) {
						t.Errorf("spike %s %s: rollup baseline form counts %d/%d, raw form %d/%d", r.Tool, r.Time, b.Invalid, b.Calls, r.Invalid, r.Calls)
					}
				}
			}
			changed := 0
			for name := range merged {
				if name == "failure-rates-rollup" {
					continue
				}
				if !reflect.DeepEqual(latest[name], merged[name]) {
					t.Errorf("%s before the merge differs from after it:\nbefore %+v\n merged %+v", name, latest[name], merged[name])
				}
				if !reflect.DeepEqual(first[name], merged[name]) {
					changed++
				}
			}
			if changed < 6 {
				t.Errorf("the reclassification changed only %d analytics; the test would prove little", changed)
			}
		})
	}
}
