package retention_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/retention"
)

func TestMain(m *testing.M) { os.Exit(chtest.Main(m)) }

// callsAt returns one call per age, each on its own day.
func callsAt(now time.Time, ages ...time.Duration) []pipeline.Call {
	out := make([]pipeline.Call, len(ages))
	for i, age := range ages {
		ts := now.Add(-age).Truncate(time.Second)
		out[i] = pipeline.Call{Time: ts, TimeMs: ts.UnixMilli(), DurationMs: 5, Tenant: "acme", Server: "kb", Tool: "search",
			SessionKey: "s", RequestID: fmt.Sprint(i), CallID: uint64(i + 1), Source: "capture", ArgsJSON: "{}",
			ArgKeys: []string{}, ArgValues: []string{}, HasResponse: 1, IsError: -1, Category: "OK", IngestedMs: 1}
	}
	return out
}

func count(t *testing.T, e *chtest.Engine, q string) uint64 {
	t.Helper()
	var r []struct {
		N uint64 `ch:"n"`
	}
	if err := e.DB.Select(context.Background(), &r, q); err != nil {
		t.Fatalf("%s: %s: %v", e.Name, q, err)
	}
	return r[0].N
}

const day = 24 * time.Hour

// TestRetention runs the retention job on both engines: the 18.16 server
// has no table TTL, so old daily partitions are dropped; modern engines get
// a TTL that their merges apply.
func TestRetention(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	cfg := retention.Config{Raw: 30 * day, Rollup: 35 * day}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			calls := callsAt(now, 40*day, 33*day, 29*day, day)
			for i := range calls {
				// Failed, so that calls_5m_classes, which keeps failed and
				// misflagged calls only, holds them too.
				calls[i].Category, calls[i].IsFailure = "RATE_LIMITED", 1
			}
			e.Insert(t, calls)
			// Each call validated and failing one path: call_violations
			// expires with the raw calls.
			var tools pipeline.ToolRows
			for _, c := range calls {
				v := pipeline.Violation{Time: c.Time, TimeMs: c.TimeMs, Tenant: c.Tenant, Server: c.Server, Tool: c.Tool, CallID: c.CallID,
					DefinitionHash: 1, Side: "arguments", Path: "q", Reason: "missing_required", Category: c.Category, IsFailure: c.IsFailure, IngestedMs: c.IngestedMs}
				tools.Violations = append(tools.Violations, v)
			}
			e.InsertTools(t, tools)
			res, err := retention.Apply(ctx, e.DB, cfg, now)
			if err != nil {
				t.Fatal(err)
			}
			if e.Modern() {
				if res.Mode != "ttl" || len(res.Changed) != 20 || !slices.Contains(res.Changed, "invalid_args_folded: TTL hour + 30 days") ||
					!slices.Contains(res.Changed, "chains_folded: TTL hour + 30 days") || !slices.Contains(res.Changed, "chain_folds: TTL hour + 30 days") ||
					!slices.Contains(res.Changed, "recalls_folded: TTL hour + 30 days") || !slices.Contains(res.Changed, "sessions_folded: TTL hour + 30 days") ||
					!slices.Contains(res.Changed, "calls_categories_folded: TTL hour + 35 days") {
					t.Fatalf("modern engine: mode %s, changes %v; want a TTL on 20 tables, the folds of the raw calls' hours kept as long as they, those of the rollups' as long as the rollups", res.Mode, res.Changed)
				}
				var ddl []struct {
					S string `ch:"s"`
				}
				if err := e.DB.Select(ctx, &ddl, "SELECT engine_full AS s FROM system.tables WHERE database = currentDatabase() AND name = 'calls'"); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(ddl[0].S, "TTL ts + toIntervalDay(30)") {
					t.Errorf("calls engine after retention: %s", ddl[0].S)
				}
				for _, tbl := range []string{"calls", "calls_5m", "calls_5m_classes", "call_violations"} {
					if err := e.DB.Exec(ctx, "OPTIMIZE TABLE "+tbl+" FINAL"); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				want := []string{"calls: dropped partition " + now.Add(-40*day).Format("20060102"),
					"calls: dropped partition " + now.Add(-33*day).Format("20060102"),
					"calls_5m: dropped partition " + now.Add(-40*day).Format("20060102"),
					"calls_5m_classes: dropped partition " + now.Add(-40*day).Format("20060102")}
				// calls_hour_inserts is partitioned by month: the month of
				// the call 40 days ago goes once it ends by the cutoff.
				if month := now.Add(-40 * day).Format("200601"); !strings.HasPrefix(now.Add(-35*day).Format("20060102"), month) {
					want = append(want, "calls_hour_inserts: dropped partition "+month)
				}
				want = append(want, "call_violations: dropped partition "+now.Add(-40*day).Format("20060102"),
					"call_violations: dropped partition "+now.Add(-33*day).Format("20060102"))
				if res.Mode != "partitions" || strings.Join(res.Changed, "\n") != strings.Join(want, "\n") {
					t.Fatalf("18.16: mode %s, changes\n%s\nwant\n%s", res.Mode, strings.Join(res.Changed, "\n"), strings.Join(want, "\n"))
				}
			}
			if n := count(t, e, "SELECT count() AS n FROM calls FINAL"); n != 2 {
				t.Errorf("calls left: %d, want the 2 younger than 30 days", n)
			}
			if n := count(t, e, "SELECT count() AS n FROM call_violations FINAL"); n != 2 {
				t.Errorf("call_violations rows left: %d, want the 2 younger than 30 days", n)
			}
			for _, tbl := range []string{"calls_5m", "calls_5m_classes"} {
				if n := count(t, e, "SELECT toUInt64(uniqExactMerge(calls)) AS n FROM "+tbl); n != 3 {
					t.Errorf("%s calls left: %d, want the 3 younger than 35 days", tbl, n)
				}
			}
			again, err := retention.Apply(ctx, e.DB, cfg, now)
			if err != nil || len(again.Changed) != 0 {
				t.Errorf("second run: %v, %v; want no change", again.Changed, err)
			}
		})
	}
}

// TestRetentionFoldsOldToolSightings: a tool sighted hourly for ten days,
// its definition changed once on the third day. With sightings folded after
// 7 days, the days before the cutoff (a UTC midnight) keep the ends of
// their runs, the rest stays; the run's change point stays too. A second
// run the same day folds nothing.
func TestRetentionFoldsOldToolSightings(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 15, 30, 0, 0, time.UTC)
	start := now.Add(-10 * day).Truncate(day) // 2026-11-19
	cutoff := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	var rows pipeline.ToolRows
	var before, kept int
	for at := start.Add(30 * time.Minute); at.Before(now); at = at.Add(time.Hour) {
		hash := uint64(1)
		if !at.Before(start.Add(2*day + 10*time.Hour)) { // 11-21 10:30
			hash = 2
		}
		rows.Sightings = append(rows.Sightings, pipeline.ToolSighting{Time: at, TimeMs: at.UnixMilli(), Tenant: "acme",
			Server: "kb", Tool: "search", DefinitionHash: hash, IngestedMs: 1})
		if at.Before(cutoff) {
			before++
		}
	}
	// Kept before the cutoff: each of the three days' first and last, and
	// on 11-21 the last of version 1 (09:30) and the first of version 2.
	kept = 3*2 + 2
	cfg := retention.Config{Sightings: 7 * day}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.InsertTools(t, rows)
			res, err := retention.Apply(ctx, e.DB, cfg, now)
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("tool_sightings: folded %d of the %d sightings before 2026-11-22 in ", before-kept, before)
			if len(res.Changed) != 1 || !strings.HasPrefix(res.Changed[0], want) {
				t.Fatalf("changes %q, want %q", res.Changed, want)
			}
			if n := count(t, e, "SELECT count() AS n FROM tool_sightings"); n != uint64(len(rows.Sightings)-before+kept) {
				t.Errorf("%d sightings left, want %d", n, len(rows.Sightings)-before+kept)
			}
			if n := count(t, e, "SELECT count() AS n FROM tool_sightings WHERE definition_hash = 2 AND ts_ms = "+
				fmt.Sprint(start.Add(2*day+10*time.Hour+30*time.Minute).UnixMilli())); n != 1 {
				t.Errorf("the change point at 11-21 10:30 was folded")
			}
			again, err := retention.Apply(ctx, e.DB, cfg, now.Add(time.Hour))
			if err != nil || len(again.Changed) != 0 {
				t.Errorf("second run: %v, %v; want no change", again.Changed, err)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  retention.Config
		want string // substring of the error; "" for valid
	}{
		{retention.Config{Raw: 30 * day, Rollup: 400 * day}, ""},
		{retention.Config{}, ""},
		{retention.Config{Raw: 30 * day}, ""},
		{retention.Config{Raw: 36 * time.Hour}, "whole days"},
		{retention.Config{Sightings: 7 * day}, ""},
		{retention.Config{Sightings: 36 * time.Hour}, "-tool-sightings-fold-after 36h0m0s: want whole days"},
		{retention.Config{Raw: -day}, "whole days"},
		{retention.Config{Raw: 30 * day, Rollup: 7 * day}, "shorter than -retention"},
		{retention.Config{Raw: 30 * day, Sightings: 7 * day, FoldRollup: 15 * day, Cluster: "c"}, ""},
	} {
		err := tc.cfg.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// TestRetentionFoldsSettledRollupHours: the job folds the complete hours
// of calls_5m once their last insert is ten minutes old, and only once, and
// their retry chains once the last insert into them and the hours on either
// side is; the quiet hours between them (compact.RollupHours' empty folds)
// at once, and the quiet hours' chains (none) recorded as empty folds.
func TestRetentionFoldsSettledRollupHours(t *testing.T) {
	ctx := context.Background()
	cfg := retention.Config{FoldRollup: 3 * day}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			past := time.Now().UTC().Truncate(day).Add(-2 * day)
			e.Insert(t, callsAt(past.Add(day), 10*time.Hour, 20*time.Hour)) // 14:00 and 04:00
			now := time.Now()
			quiet := "calls_5m_folded: recorded 9 quiet hours (no calls) from " + past.Add(5*time.Hour).Format(time.RFC3339) + " to " + past.Add(13*time.Hour).Format(time.RFC3339) + " as empty"
			if res, err := retention.Apply(ctx, e.DB, cfg, now); err != nil || len(res.Changed) != 2 || res.Changed[0] != quiet || !strings.HasPrefix(res.Changed[1], "chains_folded: recorded ") {
				t.Fatalf("right after the insert: %v, %v; want the quiet hours 05:00-13:00 and their chains recorded as empty, nothing else yet", res.Changed, err)
			}
			// The chains of the two hours, and, recorded as empty, those of
			// their quiet neighbours and, when the eleven minutes cross into
			// another hour, of the quiet hour that then becomes complete.
			want := []string{
				"calls_5m_folded: folded 2 hours from " + past.Add(4*time.Hour).Format(time.RFC3339) + " to " + past.Add(14*time.Hour).Format(time.RFC3339) + " in ",
				"chains_folded: folded 2 hours from " + past.Add(4*time.Hour).Format(time.RFC3339) + " to " + past.Add(14*time.Hour).Format(time.RFC3339) + " in ",
				"chains_folded: recorded ",
			}
			res, err := retention.Apply(ctx, e.DB, cfg, now.Add(11*time.Minute))
			if err != nil || len(res.Changed) != 3 || !strings.HasPrefix(res.Changed[0], want[0]) || !strings.HasPrefix(res.Changed[1], want[1]) || !strings.HasPrefix(res.Changed[2], want[2]) {
				t.Fatalf("ten minutes later: %q, %v; want %q...", res.Changed, err, want)
			}
			var folds []struct {
				Hours []int64 `ch:"hours"`
			}
			err = e.DB.Select(ctx, &folds, `SELECT arraySort(groupArray(toInt64(toUInt32(hour)))) AS hours FROM chain_current_folds
				WHERE hour >= toDateTime(@from_s, 'UTC') AND hour < toDateTime(@to_s, 'UTC')`,
				clickhouse.Named("from_s", past.Add(3*time.Hour).Unix()), clickhouse.Named("to_s", past.Add(16*time.Hour).Unix()))
			if err != nil {
				t.Fatal(err)
			}
			var hours []int64
			for h := past.Add(3 * time.Hour); h.Before(past.Add(16 * time.Hour)); h = h.Add(time.Hour) {
				hours = append(hours, h.Unix())
			}
			if len(folds) != 1 || !slices.Equal(folds[0].Hours, hours) {
				t.Errorf("current chain folds of 03:00-15:00: %v; want every hour, %v", folds, hours)
			}
			if n := count(t, e, "SELECT sum(calls) AS n FROM calls_5m_folded"); n != 2 {
				t.Errorf("the folds count %d calls, want 2", n)
			}
			if res, err := retention.Apply(ctx, e.DB, cfg, now.Add(11*time.Minute)); err != nil || len(res.Changed) != 0 {
				t.Errorf("second run: %v, %v; want no change", res.Changed, err)
			}
		})
	}
}
