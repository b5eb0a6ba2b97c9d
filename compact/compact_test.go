package compact_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/pipeline"
)

func TestMain(m *testing.M) { os.Exit(chtest.Main(m)) }

func TestDayOf(t *testing.T) {
	east := time.FixedZone("UTC+5", 5*3600)
	for _, tc := range []struct {
		t    time.Time
		want uint32
	}{
		{time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), 20261128},
		{time.Date(2026, 11, 28, 23, 59, 59, 999e6, time.UTC), 20261128},
		{time.Date(2026, 11, 29, 3, 0, 0, 0, east), 20261128}, // 22:00 UTC the day before
		{time.Date(2027, 1, 1, 5, 0, 0, 0, east), 20270101},
		{time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC), 20261231},
	} {
		if got := compact.DayOf(tc.t); got != tc.want {
			t.Errorf("DayOf(%s) = %d, want %d", tc.t, got, tc.want)
		}
	}
}

// calls returns n calls on day, ingested at ingestedMs with category cat.
func calls(day time.Time, n int, ingestedMs int64, cat string) []pipeline.Call {
	out := make([]pipeline.Call, n)
	for i := range out {
		ts := day.Add(time.Duration(i) * time.Minute)
		out[i] = pipeline.Call{Time: ts, TimeMs: ts.UnixMilli(), DurationMs: 5, Tenant: "acme", Server: "kb", Tool: "search",
			SessionKey: "s", RequestID: fmt.Sprint(i), CallID: uint64(i + 1), Source: "capture", ArgsJSON: "{}",
			ArgKeys: []string{}, ArgValues: []string{}, HasResponse: 1, IsError: -1, Category: cat, IngestedMs: ingestedMs}
	}
	return out
}

// TestDaysFoldsTheCopiesOfAReplayedDay stores a day's calls twice, the
// second time reclassified, and folds that day: one row per call is left,
// the later ingest's, without FINAL.
func TestDaysFoldsTheCopiesOfAReplayedDay(t *testing.T) {
	ctx := context.Background()
	day := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	const n = 50
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, calls(day, n, 1, "OK"))
			e.Insert(t, calls(day, n, 2, "EMPTY_RESULT"))
			var folded []uint32
			if err := compact.Days(ctx, e.DB, []uint32{compact.DayOf(day)}, func(d uint32, _ time.Duration) { folded = append(folded, d) }); err != nil {
				t.Fatal(err)
			}
			if len(folded) != 1 || folded[0] != 20261128 {
				t.Errorf("done was told %v, want [20261128]", folded)
			}
			var r []struct {
				Rows   uint64 `ch:"rows_n"`
				Latest uint64 `ch:"latest_n"`
			}
			if err := e.DB.Select(ctx, &r, "SELECT count() AS rows_n, countIf(ingested_ms = 2 AND category = 'EMPTY_RESULT') AS latest_n FROM calls"); err != nil {
				t.Fatal(err)
			}
			if r[0].Rows != n || r[0].Latest != n {
				t.Errorf("after folding: %d rows, %d of the later ingest; want %d and %d", r[0].Rows, r[0].Latest, n, n)
			}
		})
	}
}

type failingDB struct{}

func (failingDB) Exec(context.Context, string, ...any) error { return errors.New("server gone") }
func (failingDB) Select(context.Context, any, string, ...any) error {
	return errors.New("server gone")
}

func TestDaysNamesTheDayThatFailed(t *testing.T) {
	err := compact.Days(context.Background(), failingDB{}, []uint32{20261128, 20261129}, nil)
	if err == nil || !strings.Contains(err.Error(), "fold partition 20261128: server gone") {
		t.Fatalf("error %v, want the first day named", err)
	}
}

// TestNewClusteredNeedsAKnownCluster: a cluster name the server does not
// list is refused before any job runs.
func TestNewClusteredNeedsAKnownCluster(t *testing.T) {
	for _, e := range chtest.Engines(t) {
		_, err := compact.NewClustered(context.Background(), e.DB, "no_such_cluster")
		if err == nil || !strings.Contains(err.Error(), "cluster no_such_cluster: not in the server's system.clusters") {
			t.Errorf("%s: %v; want the unknown cluster refused", e.Name, err)
		}
	}
}

// skippingDB is a server that skips the first skips merges (a background
// merge holds the day's parts): the day keeps 7 copies until then.
type skippingDB struct {
	skips, merges int
}

func (d *skippingDB) Exec(_ context.Context, q string, _ ...any) error {
	if strings.Contains(q, "OPTIMIZE") {
		d.merges++
	}
	return nil
}

func (d *skippingDB) Select(_ context.Context, dest any, _ string, _ ...any) error {
	rows := dest.(*[]struct {
		Copies uint64 `ch:"copies"`
	})
	*rows = append(*rows, struct {
		Copies uint64 `ch:"copies"`
	}{})
	if d.merges <= d.skips {
		(*rows)[0].Copies = 7
	}
	return nil
}

// TestDaysMergesAgainWhatTheServerSkipped: an OPTIMIZE the server skipped
// is run again until the day holds no copies, and a day that keeps its
// copies through every attempt is an error that says so.
func TestDaysMergesAgainWhatTheServerSkipped(t *testing.T) {
	ctx := context.Background()
	db := &skippingDB{skips: 2}
	if err := compact.FoldDay(ctx, db, 20261128, time.Millisecond); err != nil || db.merges != 3 {
		t.Errorf("two merges skipped: %v after %d merges; want success after 3", err, db.merges)
	}
	db = &skippingDB{skips: 100}
	err := compact.FoldDay(ctx, db, 20261128, time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "7 copies left after 5 merges") || db.merges != 5 {
		t.Errorf("every merge skipped: %v after %d merges; want the copies reported after 5", err, db.merges)
	}
}
