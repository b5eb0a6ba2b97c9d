package dashboards_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
)

// spikesPanel returns the INVALID_ARGUMENT spikes panel's SQL and its
// variables at All, and its FINAL form (testdata/final), the definition.
func spikesPanel(t *testing.T) (panel panelTarget, final string) {
	t.Helper()
	tg := panelTargetOf(t, "", "invalid_argument_spikes")
	b, err := os.ReadFile(filepath.Join("testdata", "final", tg.file+".sql"))
	if err != nil {
		t.Fatal(err)
	}
	return tg, string(b)
}

// hourlyFleet returns, for each of tools tools, 20 calls in each of the
// hours [0, hours) before now, but for gaps (a tool skips the hours where
// (h*7 + k*3) % 11 == 0), 0, 1 or 2 of them INVALID_ARGUMENT by a
// pseudo-random pattern, and 3 in some of the last two days' hours. A
// baseline's share then hovers around 5 %, the share at which 3 of 20 is
// exactly 3 times it, so that whether a bucket is a spike turns on single
// buckets of its baseline, the one exactly 7 days before it included.
// Every fourth call is ingested twice, and some of the last two days' a
// second time as INVALID_ARGUMENT, so that the counts must drop replaced
// copies. (The rollup that the baseline before the range comes from counts
// a call re-ingested in another class under both, a documented
// approximation: the range, which the panel reads raw, holds them.)
func hourlyFleet(tools, hours int) []pipeline.Call {
	var fs []fx
	for k := 0; k < tools; k++ {
		tool := fmt.Sprintf("tool_%03d", k)
		for h := 0; h < hours; h++ {
			if (h*7+k*3)%11 == 0 {
				continue
			}
			bad := (h*7 + k*13 + h*h) % 3
			if h < 48 && (h+k)%4 == 1 {
				bad = 3
			}
			for i := 0; i < 20; i++ {
				c := classify.OK
				if i < bad {
					c = classify.InvalidArgument
				}
				f := fx{at: time.Duration(h)*hr + time.Duration(i+1)*time.Minute, tool: tool, session: fmt.Sprintf("%s-%d-%d", tool, h, i), category: c}
				if h < 40 && (h*20+i)%37 == 0 { // in the range, read raw
					f.latest = classify.InvalidArgument
				}
				fs = append(fs, f)
			}
		}
	}
	out := calls(fs)
	for i := 0; i < len(out); i += 4 {
		c := out[i]
		c.IngestedMs += 10
		out = append(out, c)
	}
	return out
}

// TestInvalidArgumentSpikesPanelSumsItsBaselineExactly compares the panel,
// whose 7-day baseline is a running sum over each tool's sorted buckets,
// with its FINAL form, which sums the buckets of each baseline one by one:
// a fleet of tools with buckets every hour but for gaps, so that most
// buckets have one exactly 7 days (604800 s) before them, which the
// baseline includes, and re-ingested calls, over a range of two days whose
// baseline partly comes from the rollup; again with the complete hours
// folded (compact.RollupHours), range and baseline, with calls at the
// range's end and after it in its last, folded hour, after late calls into
// a folded hour, and folded again. Then with the panel's memory
// capped: the FINAL form's per-bucket copies of each tool's arrays are
// quadratic in its buckets and do not fit where the running sum does.
func TestInvalidArgumentSpikesPanelSumsItsBaselineExactly(t *testing.T) {
	tg, final := spikesPanel(t)
	// Calls at the range's end and after it, in its last 5-minute bucket
	// and later, so that a folded hour's buckets past the end count only
	// up to it.
	fleet := append(hourlyFleet(6, 10*24), calls(repeat(4, fx{tool: "tool_000", category: classify.InvalidArgument}, func(i int, f *fx) {
		f.at, f.session = -time.Duration(i)*150*time.Second, fmt.Sprintf("tool_000-end%d", i)
	}))...)
	// A tool that spikes in the hour from 10:00 today, the last bucket of
	// the range ending at 10:20:17 below, and whose only baseline is the
	// hour just before its 7 days (09:00 a week ago): half of it
	// INVALID_ARGUMENT, which would hide the spike if that hour were
	// added to the bucket's baseline.
	fleet = append(fleet, calls(repeat(40, fx{tool: "tool_edge", category: classify.OK}, func(i int, f *fx) {
		f.session = fmt.Sprintf("tool_edge-%d", i)
		if i < 20 {
			f.at = 2*hr - time.Duration(i+1)*time.Minute // 10:01-10:20
			if i < 5 {
				f.category = classify.InvalidArgument
			}
			return
		}
		f.at = 7*24*hr + 3*hr - time.Duration(i-19)*time.Minute // 09:01-09:20 a week before
		if i < 30 {
			f.category = classify.InvalidArgument
		}
	}))...)
	r := macroRange{from: now.Add(-48 * time.Hour), to: now, interval: 5 * time.Minute}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, fleet)
			_, want := query(t, e, tg.expand(t, e, final, r))
			spikes := 0
			for _, row := range want {
				if v, ok := row[3].(float64); ok && !math.IsNaN(v) { // chDB scans NULL as NaN
					spikes++
				}
			}
			if spikes == 0 || spikes == len(want) {
				t.Fatalf("%d spikes in %d rows: the fixture must hold both", spikes, len(want))
			}
			// Late INVALID_ARGUMENT calls of a tool 5 days ago: enough to
			// raise its baseline past its spikes in the range. Then late
			// calls 30 hours ago, in the range: the raw calls are read from
			// their hour on, but for the folded hours after it.
			lateAt := func(at time.Duration, first uint64) []pipeline.Call {
				late := make([]pipeline.Call, 200)
				for i := range late {
					c := fleet[0]
					c.Time = now.Add(at + time.Duration(i)*time.Second)
					c.TimeMs, c.CallID, c.RequestID = c.Time.UnixMilli(), first+uint64(i), fmt.Sprint("late", first+uint64(i))
					c.Category, c.IsFailure = string(classify.InvalidArgument), 1
					late[i] = c
				}
				return late
			}
			// The range, and one that starts and ends inside folded hours.
			ranges := []macroRange{r, {from: now.Add(-47*time.Hour - 10*time.Minute), to: now.Add(-100*time.Minute + 17*time.Second), interval: 5 * time.Minute}}
			// Before any fold, then the complete hours folded into plain
			// counts, then one of them taking late calls, then folded again.
			for _, stage := range []string{"not folded", "folded", "late calls into a folded hour", "folded again", "late calls into a folded hour of the range", "folded once more"} {
				switch stage {
				case "folded":
					if res, err := compact.RollupHours(context.Background(), e.DB, time.Now(), time.Since(now)+11*24*time.Hour, 0); err != nil || len(res.Folded) < 200 {
						t.Fatalf("fold: %v %v, want the fleet's hours folded", res, err)
					}
				case "late calls into a folded hour":
					e.Insert(t, lateAt(-5*24*time.Hour, 1<<50))
				case "late calls into a folded hour of the range":
					e.Insert(t, lateAt(-30*time.Hour, 1<<51))
				case "folded again", "folded once more":
					if res, err := compact.RollupHours(context.Background(), e.DB, time.Now(), time.Since(now)+11*24*time.Hour, 0); err != nil || len(res.Folded) != 1 {
						t.Fatalf("%s: %v %v, want the late calls' hour", stage, res, err)
					}
				}
				for k, r := range ranges {
					_, got := query(t, e, tg.expand(t, e, tg.sql, r))
					_, want := query(t, e, tg.expand(t, e, final, r))
					if k == 1 && !hasSpike(want, "tool_edge") {
						t.Fatalf("%s: no tool_edge spike by the FINAL form: the fixture must hold one", stage)
					}
					if g, w := canonical(got), canonical(want); g != w {
						t.Errorf("%s, %s to %s: the panel differs from its FINAL form:\n got %s\nwant %s", stage, r.from.Format(time.RFC3339), r.to.Format(time.RFC3339), g, w)
					}
				}
			}
		})
	}
}

// hasSpike reports whether the panel rows mark a spike of tool.
func hasSpike(rows [][]any, tool string) bool {
	for _, row := range rows {
		if v, ok := row[3].(float64); ok && !math.IsNaN(v) && row[1] == tool { // chDB scans NULL as NaN
			return true
		}
	}
	return false
}

// TestInvalidArgumentSpikesPanelIsLinearInItsBuckets runs the panel over
// 100 tools with a bucket in every hour of a 7-day range and of the 7 days
// before it (336 buckets a tool), with the query's memory capped at 96 MB:
// the panel needs a few MB; its FINAL form, whose baseline copies both of
// a tool's arrays for each bucket, asks for hundreds (checked here too, so
// that the cap is known to bind).
func TestInvalidArgumentSpikesPanelIsLinearInItsBuckets(t *testing.T) {
	tg, final := spikesPanel(t)
	var fs []fx
	for k := 0; k < 100; k++ {
		for h := 0; h < 14*24; h++ {
			c := classify.OK
			if (h+k)%4 == 0 {
				c = classify.InvalidArgument
			}
			fs = append(fs, fx{at: time.Duration(h)*hr + 30*time.Minute, tool: fmt.Sprintf("tool_%02d", k), session: fmt.Sprintf("s%d-%d", k, h), category: c})
		}
	}
	fleet := calls(fs)
	r := macroRange{from: now.Add(-7 * 24 * time.Hour), to: now, interval: time.Hour}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, fleet)
			panel, def := tg.expand(t, e, tg.sql, r), tg.expand(t, e, final, r)
			if _, rows := query(t, e, panel); len(rows) != 100*7*24 {
				t.Errorf("%d rows, want one per tool and hour: %d", len(rows), 100*7*24)
			}
			if err := execCapped(t, e, panel, 96_000_000); err != nil {
				t.Errorf("the panel with its memory capped at 96 MB: %v", err)
			}
			err := execCapped(t, e, def, 96_000_000)
			if err == nil || !strings.Contains(err.Error(), "emory limit") {
				t.Errorf("the FINAL form under the same cap: %v; want a memory limit error (the cap does not bind)", err)
			}
		})
	}
}

// execCapped runs sql on e with max_memory_usage set to limit: as a query
// setting on the server (18.16 does not apply a SETTINGS clause of a
// SELECT), as a SETTINGS clause on chDB.
func execCapped(t *testing.T, e *chtest.Engine, sql string, limit int) error {
	t.Helper()
	if e.Conn != nil {
		ctx := clickhouse.Context(t.Context(), clickhouse.WithSettings(clickhouse.Settings{"max_memory_usage": limit}))
		return e.Conn.Exec(ctx, sql)
	}
	return e.DB.Exec(t.Context(), fmt.Sprintf("%s SETTINGS max_memory_usage = %d", sql, limit))
}
