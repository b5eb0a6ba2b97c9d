package queries_test

import (
	"context"
	_ "embed"
	"fmt"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/queries"
)

// spikesDefinitionSQL is the INVALID_ARGUMENT spikes in one statement over
// calls FINAL, range and baseline alike: the definition that
// InvalidArgumentSpikes must answer as.
//
//go:embed testdata/invalid_argument_spikes_final.sql
var spikesDefinitionSQL string

// spikeCounts is a spike without its top arguments and definition change:
// what the definition returns.
type spikeCounts struct {
	Tool                        string
	Bucket                      int64
	Calls, Invalid              uint64
	Share, BaselineShare, Ratio float64
}

func definitionSpikes(t *testing.T, db queries.DB, f queries.Filter, o queries.SpikeOptions) []spikeCounts {
	t.Helper()
	step := int64(o.Step / time.Second)
	baseline := int64(o.Baseline / time.Second)
	all, tenants := 0, f.Tenants
	if len(tenants) == 0 {
		all, tenants = 1, []string{""}
	}
	var rows []struct {
		Tool        string `ch:"tool_name"`
		Bucket      int64  `ch:"bucket_s"`
		Calls       uint64 `ch:"calls_n"`
		Invalid     uint64 `ch:"invalid_n"`
		BaseCalls   uint64 `ch:"base_calls"`
		BaseInvalid uint64 `ch:"base_invalid"`
	}
	err := db.Select(context.Background(), &rows, spikesDefinitionSQL,
		clickhouse.Named("from_s", f.From.Unix()), clickhouse.Named("to_s", f.To.Unix()),
		clickhouse.Named("to_ms", f.To.UnixMilli()),
		clickhouse.Named("tenant", f.Tenant), clickhouse.Named("server", f.Server), clickhouse.Named("tool", f.Tool),
		clickhouse.Named("all_tenants", all), clickhouse.Named("tenants", tenants),
		clickhouse.Named("step_s", step), clickhouse.Named("origin_s", f.From.Unix()-(baseline+step-1)/step*step),
		clickhouse.Named("baseline_s", baseline), clickhouse.Named("ratio", o.Ratio),
		clickhouse.Named("min_share", o.MinShare), clickhouse.Named("min_calls", o.MinCalls))
	if err != nil {
		t.Fatalf("definition: %v", err)
	}
	out := make([]spikeCounts, 0, len(rows))
	for _, r := range rows {
		s := spikeCounts{Tool: r.Tool, Bucket: r.Bucket, Calls: r.Calls, Invalid: r.Invalid,
			Share: float64(r.Invalid) / float64(r.Calls)}
		if r.BaseCalls > 0 {
			s.BaselineShare = float64(r.BaseInvalid) / float64(r.BaseCalls)
		}
		if s.BaselineShare > 0 {
			s.Ratio = s.Share / s.BaselineShare
		}
		out = append(out, s)
	}
	return out
}

func countsOf(spikes []queries.Spike) []spikeCounts {
	out := make([]spikeCounts, 0, len(spikes))
	for _, s := range spikes {
		out = append(out, spikeCounts{s.Tool, s.Time.Unix(), s.Calls, s.Invalid, s.Share, s.BaselineShare, s.Ratio})
	}
	return out
}

// prunedTool reports whether some tool has calls in f's range but no bucket
// that passes the floor (MinCalls, MinShare), counted on the deduplicated
// calls: a tool whose baseline InvalidArgumentSpikes does not read.
func prunedTool(calls []pipeline.Call, f queries.Filter, o queries.SpikeOptions) bool {
	step := o.Step.Milliseconds()
	type key struct {
		tool   string
		bucket int64
	}
	n, inv := map[key]int64{}, map[key]int64{}
	tools := map[string]bool{}
	for _, c := range refDedupe(calls) {
		if !refMatches(f, c) || !refInRange(f, c.TimeMs) || len(f.Tenants) > 0 && c.Tenant != f.Tenants[0] {
			continue
		}
		k := key{c.Tool, (c.TimeMs - f.From.UnixMilli()) / step}
		n[k]++
		if c.Category == string(classify.InvalidArgument) {
			inv[k]++
		}
		tools[c.Tool] = false
	}
	for k, calls := range n {
		if calls >= o.MinCalls && float64(inv[k]) >= o.MinShare*float64(calls) {
			tools[k.tool] = true
		}
	}
	for _, candidate := range tools {
		if !candidate {
			return true
		}
	}
	return false
}

// TestInvalidArgumentSpikesMatchTheDefinition runs InvalidArgumentSpikes,
// which counts the range first and reads the baseline only for the tools
// whose range passes the floor, on random traffic with replays and
// reclassified re-ingests, on every engine, and compares it row for row
// with the definition (testdata/invalid_argument_spikes_final.sql), over
// steps on and off the 5-minute grid, baselines that are and are not whole
// steps, ranges that start or end off the grid, and filters; as inserted,
// once the complete hours are folded, after late calls into a folded hour
// and once it is folded again. The baseline from the raw calls must match
// always; the one from the rollup where the rollup is exact: without
// reclassified re-ingests and with from on the grid.
func TestInvalidArgumentSpikesMatchTheDefinition(t *testing.T) {
	ctx := context.Background()
	calls, replays := genTraffic(20261201, 3000, t0, 3*time.Hour)
	// A healthy tool besides: a copy of every third call, with a tenth of
	// its invalid calls left, so that some tools pass no floor.
	for i, c := range calls[:len(calls):len(calls)] {
		if i%3 != 0 {
			continue
		}
		c.Tool, c.CallID = "export", c.CallID+1<<40
		if c.Category == string(classify.InvalidArgument) && i%10 != 0 {
			c.Category, c.IsFailure, c.IsError = string(classify.OK), 0, 0
		}
		calls = append(calls, c)
	}
	all := append(append([]pipeline.Call{}, calls...), replays...)
	unchanged := append([]pipeline.Call{}, calls...)
	for _, c := range replays {
		if c.IngestedMs == 1 {
			unchanged = append(unchanged, c)
		}
	}
	h := func(d time.Duration) time.Time { return t0.Add(d) }
	type spikeCase struct {
		f      queries.Filter
		o      queries.SpikeOptions
		rollup bool // also compare the rollup baseline (from on the grid, step a multiple of 5 minutes)
	}
	cases := []spikeCase{
		{queries.Filter{From: h(time.Hour), To: h(3 * time.Hour)}, queries.SpikeOptions{Step: 10 * time.Minute, Baseline: time.Hour, MinShare: 0.06, Ratio: 1.2}, true},
		{queries.Filter{From: h(70 * time.Minute), To: h(170 * time.Minute)}, queries.SpikeOptions{Step: 10 * time.Minute, Baseline: 45 * time.Minute, MinShare: 0.07, Ratio: 1.1}, true},
		{queries.Filter{From: h(time.Hour + 30*time.Second + 250*time.Millisecond), To: h(3*time.Hour - 10*time.Second)}, queries.SpikeOptions{Step: 7 * time.Minute, Baseline: time.Hour, MinShare: 0.06, Ratio: 1.2}, false},
		{queries.Filter{From: h(61 * time.Minute), To: h(3 * time.Hour)}, queries.SpikeOptions{Step: 10 * time.Minute, Baseline: time.Hour, MinShare: 0.06, Ratio: 1.2}, false},
		{queries.Filter{From: h(time.Hour), To: h(3 * time.Hour), Tenant: "acme"}, queries.SpikeOptions{Step: 30 * time.Minute, Baseline: 2 * time.Hour, MinShare: 0.05, Ratio: 1.1}, true},
		{queries.Filter{From: h(time.Hour), To: h(3 * time.Hour), Server: "kb", Tool: "search"}, queries.SpikeOptions{Step: 15 * time.Minute, Baseline: time.Hour, MinCalls: 10, MinShare: 0.04, Ratio: 1.1}, true},
		{queries.Filter{From: h(time.Hour), To: h(3 * time.Hour), Tenants: []string{"globex"}}, queries.SpikeOptions{Step: 20 * time.Minute, Baseline: time.Hour, MinShare: 0.06, Ratio: 1.1}, true},
		{queries.Filter{From: h(2 * time.Hour), To: h(3 * time.Hour)}, queries.SpikeOptions{}, true},
		// The range ends inside a 5-minute cell that lies in one bucket;
		// thresholds so low that every bucket with calls is a spike, the
		// last, cut one too.
		{queries.Filter{From: h(time.Hour), To: h(3*time.Hour - 150*time.Second)}, queries.SpikeOptions{Step: 10 * time.Minute, Baseline: time.Hour, MinShare: 0.01, Ratio: 0.1}, true},
	}
	for i := range cases {
		cases[i].o = cases[i].o.WithDefaults()
	}
	check := func(t *testing.T, db queries.DB, c spikeCase, rollup bool) (rows int) {
		t.Helper()
		name := fmt.Sprintf("[%s, %s) tenant=%q tenants=%q server=%q tool=%q %+v rollup=%v",
			c.f.From.Format("15:04:05.000"), c.f.To.Format("15:04:05.000"), c.f.Tenant, c.f.Tenants, c.f.Server, c.f.Tool, c.o, rollup)
		want := definitionSpikes(t, db, c.f, c.o)
		got, err := queries.InvalidArgumentSpikesFrom(ctx, db, c.f, c.o, rollup)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !equalRows(countsOf(got), want) {
			t.Errorf("%s: differs from the definition\n got %s\nwant %s", name, dump(countsOf(got)), dump(want))
		}
		// The same when the tools do not fit in a query's list: every
		// tool's baseline and top arguments are read.
		every, err := queries.InvalidArgumentSpikesListing(ctx, db, c.f, c.o, rollup, 0)
		if err != nil {
			t.Fatalf("%s, every tool: %v", name, err)
		}
		if !equalRows(every, got) {
			t.Errorf("%s: reading every tool differs from reading the candidates\nevery %s\n cand %s", name, dump(every), dump(got))
		}
		return len(want)
	}
	// The test proves something only if spikes are found and some of the
	// tools in the ranges are left out of the baseline.
	pruned := 0
	for _, c := range cases {
		if prunedTool(all, c.f, c.o) {
			pruned++
		}
	}
	if pruned < 3 {
		t.Fatalf("only %d cases have a tool whose baseline is not read; the traffic tests too little", pruned)
	}
	// Each engine's calls are compared as inserted, once their complete
	// hours are folded (compact.RollupHours: the range's whole 5-minute
	// cells come from the folds), after late calls into a folded hour (whose
	// fold no longer counts: its calls are read raw again), and once that
	// hour is folded again.
	late := lateCalls(calls, h(100*time.Minute), h(110*time.Minute))
	stages := func(t *testing.T, e *chtest.Engine, run func(stage string) int) {
		t.Helper()
		fold := func(stage string, hours int) {
			t.Helper()
			res, err := compact.RollupHours(ctx, e.DB, time.Now(), time.Since(t0)+48*time.Hour, 0)
			if err != nil || len(res.Folded) < hours {
				t.Fatalf("%s: %+v %v, want at least %d hours folded", stage, res, err, hours)
			}
		}
		rows := run("as inserted")
		fold("fold", 3)
		if n := run("folded"); n != rows {
			t.Errorf("%d spikes once folded, %d before: the cases differ", n, rows)
		}
		e.Insert(t, late)
		run("late calls into a folded hour")
		fold("fold again", 1)
		run("folded again")
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name+"/raw baseline", func(t *testing.T) {
			e.Insert(t, calls)
			e.Insert(t, replays)
			stages(t, e, func(stage string) int {
				rows := 0
				for _, c := range cases {
					rows += check(t, e.DB, c, false)
				}
				t.Logf("%s: %d spikes in %d cases", stage, rows, len(cases))
				if rows < 20 {
					t.Errorf("%s: the definition found %d spikes in all; the cases test too little", stage, rows)
				}
				return rows
			})
		})
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name+"/rollup baseline", func(t *testing.T) {
			e.Insert(t, unchanged)
			stages(t, e, func(stage string) int {
				rows := 0
				for _, c := range cases {
					if c.rollup {
						rows += check(t, e.DB, c, true)
					}
				}
				t.Logf("%s: %d spikes", stage, rows)
				if rows < 10 {
					t.Errorf("%s: the definition found %d spikes in all; the cases test too little", stage, rows)
				}
				return rows
			})
		})
	}
}

// lateCalls returns new calls, one for each of calls in [from, to), at the
// same time with another call id, half of them INVALID_ARGUMENT: calls that
// arrive after their hour was folded. The copies of a call in calls stay
// copies of one call, alike: two copies of an ingest that differ have no
// latest.
func lateCalls(calls []pipeline.Call, from, to time.Time) []pipeline.Call {
	var out []pipeline.Call
	for _, c := range calls {
		if c.Time.Before(from) || !c.Time.Before(to) {
			continue
		}
		c.CallID += 1 << 41
		c.RequestID += "-late"
		if c.CallID%2 == 0 {
			c.Category, c.IsFailure, c.IsError = string(classify.InvalidArgument), 1, 1
		}
		out = append(out, c)
	}
	return out
}
