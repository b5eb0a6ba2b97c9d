package queries

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/pipeline"
)

// foldTraffic returns n calls over [from, from+span), over five tools and
// two tenants, a tenth of them INVALID_ARGUMENT, each with a reclassified
// copy one time in eight, call ids from first.
func foldTraffic(seed uint64, from time.Time, span time.Duration, n int, first uint64) []pipeline.Call {
	rng := rand.New(rand.NewPCG(seed, 1))
	var out []pipeline.Call
	for i := range n {
		ts := from.Add(time.Duration(rng.Int64N(int64(span))))
		cat := "OK"
		if rng.IntN(10) == 0 {
			cat = "INVALID_ARGUMENT"
		}
		c := pipeline.Call{Time: ts, TimeMs: ts.UnixMilli(), DurationMs: 5,
			Tenant: []string{"acme", "globex"}[rng.IntN(2)], Server: "kb", Tool: fmt.Sprintf("tool%d", rng.IntN(5)),
			SessionKey: "s", RequestID: fmt.Sprint(first + uint64(i)), CallID: first + uint64(i), Source: "capture", ArgsJSON: "{}",
			ArgKeys: []string{}, ArgValues: []string{}, HasResponse: 1, IsError: -1, Category: cat, IngestedMs: 1}
		out = append(out, c)
		if rng.IntN(8) == 0 {
			c.IngestedMs, c.Category = 2, "INVALID_ARGUMENT"
			if cat == "INVALID_ARGUMENT" {
				c.Category = "OK"
			}
			out = append(out, c)
		}
	}
	return out
}

// refBaseline is what invalid_argument_baseline_rollup.sql answers for
// the tenant filter (all tenants when ""): per tool and step bucket of
// [origin, lo), the distinct call ids, and those with an INVALID_ARGUMENT
// ingest.
func refBaseline(calls []pipeline.Call, tenant string, origin, lo, step int64) []string {
	type key struct {
		tool string
		b    int64
	}
	ids, invalid := map[key]map[uint64]bool{}, map[key]map[uint64]bool{}
	for _, c := range calls {
		s := c.Time.Unix() / 300 * 300 // the cell's start
		if s < origin || s >= lo || tenant != "" && c.Tenant != tenant {
			continue
		}
		k := key{c.Tool, origin + (s-origin)/step*step}
		if ids[k] == nil {
			ids[k], invalid[k] = map[uint64]bool{}, map[uint64]bool{}
		}
		ids[k][c.CallID] = true
		if c.Category == "INVALID_ARGUMENT" {
			invalid[k][c.CallID] = true
		}
	}
	var out []string
	for k, v := range ids {
		out = append(out, fmt.Sprintf("%s %d: %d %d", k.tool, k.b, len(v), len(invalid[k])))
	}
	slices.Sort(out)
	return out
}

// TestBaselineRollupReadsOnlyCurrentFolds reads the spikes' rollup baseline
// over three days, their complete hours folded into calls_5m_folded once,
// with steps that cross midnight: it matches the distinct call ids of the
// calls inserted before the fold, after it, after late inserts into folded
// hours (whose folds their counts no longer match, so those hours are
// merged from calls_5m again), after those hours are folded again, and
// when each hour has two folds at its count, as when two processes fold at
// once.
func TestBaselineRollupReadsOnlyCurrentFolds(t *testing.T) {
	ctx := context.Background()
	// RollupHours compares the time the server stamps on inserts with its
	// now: the days are today and the two before it, or, before 03:00 UTC,
	// the three before today, so that the third case's range (from d3's
	// 02:00) and its baseline lie in complete hours, which the fold reaches
	// (run between 00:00 and 02:00, its lump held no folded hour and the
	// test failed).
	d3 := time.Now().UTC().Add(-3 * time.Hour).Truncate(24 * time.Hour)
	d1 := d3.AddDate(0, 0, -2)
	calls := foldTraffic(17, d1, 68*time.Hour, 4000, 1)
	late := foldTraffic(18, d1.AddDate(0, 0, 1).Add(3*time.Hour), 20*time.Hour, 300, 100000)
	for i := range late {
		late[i].Category = "INVALID_ARGUMENT"
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, calls)
			check := func(stage string, folded bool, inserted []pipeline.Call) {
				t.Helper()
				for _, tc := range []struct {
					tenant           string
					origin, lo, step int64
				}{
					{"", d1.Unix() + 3*3600, d3.Unix() + 18*3600, 7200},
					{"globex", d1.Unix() + 300, d3.Unix() + 20*3600, 3600},
					{"", d1.Unix() + 22*3600, d3.Unix() + 2*3600, 6 * 3600}, // buckets across both midnights
				} {
					f := Filter{From: time.Unix(tc.lo, 0), To: time.Unix(tc.lo+3600, 0), Tenant: tc.tenant}
					baseline := func(origin int64, lump baselineLump) []spikeCell {
						t.Helper()
						all, set := toolArgs(nil, 0)
						args := append(f.args(), clickhouse.Named("step_s", tc.step), clickhouse.Named("origin_s", origin),
							clickhouse.Named("lo_s", tc.lo), clickhouse.Named("lump_s", lump.Bucket),
							clickhouse.Named("lump_lo_s", lump.From), clickhouse.Named("lump_hi_s", lump.To), all, set)
						var got []spikeCell
						if err := e.DB.Select(ctx, &got, invalidArgumentBaselineRollupSQL, args...); err != nil {
							t.Fatalf("%s: %v", stage, err)
						}
						return got
					}
					// No lump: one cell per tool and bucket.
					var lines []string
					for _, c := range baseline(tc.origin, baselineLump{}) {
						lines = append(lines, fmt.Sprintf("%s %d: %d %d", c.Tool, c.Bucket, c.Calls, c.Invalid))
					}
					slices.Sort(lines)
					if want := refBaseline(inserted, tc.tenant, tc.origin, tc.lo, tc.step); !slices.Equal(lines, want) {
						t.Errorf("%s, tenant %q step %d: got\n%s\nwant\n%s", stage, tc.tenant, tc.step, strings.Join(lines, "\n"), strings.Join(want, "\n"))
					}
					// The lump of a range of three buckets from lo, the
					// baseline reaching back to the first bucket at or
					// after tc.origin: each range bucket's baseline adds up
					// to the same.
					origin := tc.lo - (tc.lo-tc.origin)/tc.step*tc.step
					b := spikeBounds{From: tc.lo, Baseline: tc.lo - origin}
					lump := b.lump(origin, tc.step, tc.lo, (tc.lo+3*tc.step)*1000)
					if lump.To-lump.From < 12*3600 {
						t.Fatalf("lump %+v: shorter than 12 hours, the test checks too little", lump)
					}
					got := baseline(origin, lump)
					sums := func(cells []string) []string {
						var out []string
						for k := range int64(3) {
							at := tc.lo + k*tc.step
							calls, invalid := map[string]int64{}, map[string]int64{}
							for _, line := range cells {
								var tool string
								var bucket, c, i int64
								if _, err := fmt.Sscanf(line, "%s %d: %d %d", &tool, &bucket, &c, &i); err != nil {
									t.Fatal(err)
								}
								if bucket >= at-b.Baseline && bucket < at {
									calls[tool] += c
									invalid[tool] += i
								}
							}
							for tool, c := range calls {
								out = append(out, fmt.Sprintf("bucket %d %s: %d %d", at, tool, c, invalid[tool]))
							}
						}
						slices.Sort(out)
						return out
					}
					lines = lines[:0]
					for _, c := range got {
						lines = append(lines, fmt.Sprintf("%s %d: %d %d", c.Tool, c.Bucket, c.Calls, c.Invalid))
					}
					if g, want := sums(lines), sums(refBaseline(inserted, tc.tenant, origin, tc.lo, tc.step)); !slices.Equal(g, want) {
						t.Errorf("%s, tenant %q step %d, lump %+v: baselines\n%s\nwant\n%s", stage, tc.tenant, tc.step, lump,
							strings.Join(g, "\n"), strings.Join(want, "\n"))
					}
					// Once hours are folded, the lump holds some: fewer cells.
					if unlumped := len(baseline(origin, baselineLump{})); folded && len(got) >= unlumped {
						t.Errorf("%s, tenant %q step %d: %d cells with the lump %+v, %d without", stage, tc.tenant, tc.step, len(got), lump, unlumped)
					}
				}
			}
			check("before any fold", false, calls)
			res, err := compact.RollupHours(ctx, e.DB, time.Now(), 7*24*time.Hour, 0)
			if err != nil || len(res.Folded) < 48 {
				t.Fatalf("fold: %v %v, want at least two days of hours folded", res, err)
			}
			check("complete hours folded", true, calls)
			e.Insert(t, late)
			both := append(slices.Clip(calls), late...)
			check("late inserts into folded hours", false, both)
			lateHours := map[time.Time]bool{}
			for _, c := range late {
				lateHours[c.Time.UTC().Truncate(time.Hour)] = true
			}
			if res, err := compact.RollupHours(ctx, e.DB, time.Now(), 7*24*time.Hour, 0); err != nil || len(res.Folded) != len(lateHours) {
				t.Fatalf("fold again: %v %v, want the %d hours of the late calls folded again", res, err, len(lateHours))
			}
			check("folded again", true, both)
			// A second process that folded the same hours at the same counts.
			for _, q := range []string{
				"INSERT INTO calls_5m_folded (hour, fold, tenant, server, tool, bucket, calls, invalid, ok, empty, identities, latest_invalid) SELECT hour, fold + 1, tenant, server, tool, bucket, calls, invalid, ok, empty, identities, latest_invalid FROM calls_5m_folded",
				"INSERT INTO calls_1h_folded (hour, fold, tenant, server, tool, calls, invalid, ok, empty, identities, latest_invalid) SELECT hour, fold + 1, tenant, server, tool, calls, invalid, ok, empty, identities, latest_invalid FROM calls_1h_folded",
				"INSERT INTO calls_5m_folds (hour, inserts, fold, folded) SELECT hour, inserts, fold + 1, folded FROM calls_5m_folds",
			} {
				if err := e.DB.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			check("two folds of each hour at its count", true, both)
		})
	}
}
