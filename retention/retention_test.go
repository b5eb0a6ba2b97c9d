package retention_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

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
			e.Insert(t, callsAt(now, 40*day, 33*day, 29*day, day))
			res, err := retention.Apply(ctx, e.DB, cfg, now)
			if err != nil {
				t.Fatal(err)
			}
			if e.Modern() {
				if res.Mode != "ttl" || len(res.Changed) != 4 {
					t.Fatalf("modern engine: mode %s, changes %v; want a TTL on 4 tables", res.Mode, res.Changed)
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
				for _, tbl := range []string{"calls", "calls_5m", "calls_5m_classes"} {
					if err := e.DB.Exec(ctx, "OPTIMIZE TABLE "+tbl+" FINAL"); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				want := []string{"calls: dropped partition " + now.Add(-40*day).Format("20060102"),
					"calls: dropped partition " + now.Add(-33*day).Format("20060102"),
					"calls_5m: dropped partition " + now.Add(-40*day).Format("20060102"),
					"calls_5m_classes: dropped partition " + now.Add(-40*day).Format("20060102")}
				if res.Mode != "partitions" || strings.Join(res.Changed, "\n") != strings.Join(want, "\n") {
					t.Fatalf("18.16: mode %s, changes\n%s\nwant\n%s", res.Mode, strings.Join(res.Changed, "\n"), strings.Join(want, "\n"))
				}
			}
			if n := count(t, e, "SELECT count() AS n FROM calls FINAL"); n != 2 {
				t.Errorf("calls left: %d, want the 2 younger than 30 days", n)
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

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  retention.Config
		want string // substring of the error; "" for valid
	}{
		{retention.Config{Raw: 30 * day, Rollup: 400 * day}, ""},
		{retention.Config{}, ""},
		{retention.Config{Raw: 30 * day}, ""},
		{retention.Config{Raw: 36 * time.Hour}, "whole days"},
		{retention.Config{Raw: -day}, "whole days"},
		{retention.Config{Raw: 30 * day, Rollup: 7 * day}, "shorter than -retention"},
	} {
		err := tc.cfg.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
