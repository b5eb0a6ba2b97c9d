package dashboards_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/traffic"
)

// chainBoundGuard is the constant condition on each chain panel's raw
// branch that lets the server skip the raw calls when $chain_bound lies
// past the range's end.
const chainBoundGuard = "AND toDateTime(${chain_bound}) <= $__toTime"

// TestChainPanelsReadNoCallsPastTheirBound: over a range whose every hour
// has a current chain fold and that ends on an hour's last second (as
// Grafana's Yesterday and Previous week end), $chain_bound lies past the
// range's end, so no chain can start from it in the range, and each chain
// panel must answer from the fold alone, as its FINAL form does, without
// reading a raw call. Without the guard, each read the calls from 60 s
// before the bound to 600 s after the range's end (BENCHMARKS.md,
// thirty-fourth round). The calls table is swapped for a copy whose
// continuation column throws when it is read (an ALIAS of throwIf), which
// the panels with the guard taken out trip.
func TestChainPanelsReadNoCallsPastTheirBound(t *testing.T) {
	ctx := context.Background()
	calls := generatedCalls(t)
	from := traffic.DefaultStart.Truncate(time.Hour)
	// The traffic runs from 09:00 to 13:00: the calls of 12:00 lie in the
	// window the raw branch would read, so that reading it trips the wire.
	r := macroRange{from: from, to: from.Add(3*time.Hour - time.Second), interval: 5 * time.Minute}
	var targets []panelTarget
	for _, tg := range panelTargets(t, busiestTool(calls)) {
		if readsChainFolds(tg.sql) {
			targets = append(targets, tg)
		}
	}
	if len(targets) != 7 {
		t.Fatalf("%d chain panels, want 7: the four chain panels, Retry habits by client, Retry outcomes by client and Retry loops", len(targets))
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, calls)
			if _, err := compact.RollupChains(ctx, e.DB, time.Now(), time.Since(from)+48*time.Hour, 0); err != nil {
				t.Fatal(err)
			}
			bound := resolveBounds(t, e, targets[0].sql, targets[0].bounds, targets[0].vars, r)["chain_bound"].current()
			if want := r.to.Add(time.Second).Unix(); bound != strconv.FormatInt(want, 10) {
				t.Fatalf("chain_bound %s, want %d: not every hour of the range has a current chain fold", bound, want)
			}
			before := map[string]string{}
			for _, tg := range targets {
				final, err := os.ReadFile(filepath.Join("testdata", "final", tg.file+".sql"))
				if err != nil {
					t.Fatal(err)
				}
				_, got := query(t, e, tg.expand(t, e, tg.sql, r))
				_, want := query(t, e, tg.expand(t, e, string(final), r))
				if len(want) == 0 {
					t.Fatalf("%s: no rows; the comparison would prove nothing", tg.file)
				}
				if g, w := canonical(got), canonical(want); g != w {
					t.Errorf("%s past its bound differs from its FINAL form:\n got %s\nwant %s", tg.file, g, w)
				}
				before[tg.file] = canonical(got)
			}
			tripCalls(t, e)
			for _, tg := range targets {
				_, got := query(t, e, tg.expand(t, e, tg.sql, r))
				if g := canonical(got); g != before[tg.file] {
					t.Errorf("%s answers otherwise over the tripwired calls:\n got %s\nwant %s", tg.file, g, before[tg.file])
				}
				unguarded := strings.ReplaceAll(tg.sql, chainBoundGuard, "")
				err := e.DB.Exec(ctx, tg.expand(t, e, unguarded, r))
				if err == nil || !strings.Contains(err.Error(), "throwIf") {
					t.Errorf("%s without its guard: error %v, want the tripwire's throwIf: the test would not see a raw read", tg.file, err)
				}
			}
		})
	}
}

// tripCalls swaps e's calls table for a copy of it whose continuation
// column is an ALIAS that throws on every row read, leaving the original
// as calls_untripped. The copy is filled before it takes the name, so the
// materialized views on calls do not see its rows.
func tripCalls(t *testing.T, e *chtest.Engine) {
	t.Helper()
	ctx, err := schema.DDLContext(context.Background(), e.DB)
	if err != nil {
		t.Fatal(err)
	}
	var cols []struct {
		Name string `ch:"name"`
	}
	if err := e.DB.Select(ctx, &cols, "SELECT name FROM system.columns WHERE database = currentDatabase() AND table = 'calls' AND name != 'continuation'"); err != nil {
		t.Fatal(err)
	}
	if len(cols) < 10 {
		t.Fatalf("calls has %d columns besides continuation", len(cols))
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	list := strings.Join(names, ", ")
	for _, stmt := range []string{
		"CREATE TABLE calls_tripwire AS calls",
		"ALTER TABLE calls_tripwire DROP COLUMN continuation",
		"ALTER TABLE calls_tripwire ADD COLUMN continuation UInt8 ALIAS throwIf(ts_ms > 0)",
		"INSERT INTO calls_tripwire (" + list + ") SELECT " + list + " FROM calls",
		"RENAME TABLE calls TO calls_untripped, calls_tripwire TO calls",
	} {
		if err := e.DB.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}
