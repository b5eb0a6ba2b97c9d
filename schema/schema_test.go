package schema_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/schema"
)

func TestMain(m *testing.M) { os.Exit(chtest.Main(m)) }

func TestApplyIsIdempotentOnEveryEngine(t *testing.T) {
	ctx := context.Background()
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			// chtest applied the schema once already; a second run applies nothing.
			applied, err := schema.Apply(ctx, e.DB)
			if err != nil {
				t.Fatalf("second Apply: %v", err)
			}
			if len(applied) != 0 {
				t.Errorf("second Apply applied %v, want nothing", applied)
			}
			done, err := schema.AppliedVersions(ctx, e.DB)
			if err != nil {
				t.Fatal(err)
			}
			ms, _ := schema.Migrations()
			ddlCtx, err := schema.DDLContext(ctx, e.DB)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				if !done[m.Version] {
					t.Errorf("migration %s not recorded", m.Name)
				}
				// Every statement is idempotent on its own, too.
				if err := schema.Exec(ddlCtx, e.DB, m); err != nil {
					t.Errorf("re-running %s: %v", m.Name, err)
				}
			}
		})
	}
}

// TestApplyRepairsACrashAfterAnAddedColumn: a crash after migration 024's
// ALTER and before its record leaves the column there and the migration
// unrecorded; the next Apply must record it without running the ALTER
// again, which both engines would refuse.
func TestApplyRepairsACrashAfterAnAddedColumn(t *testing.T) {
	ctx := context.Background()
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			if err := e.DB.Exec(ctx, "TRUNCATE TABLE schema_migrations"); err != nil {
				t.Fatal(err)
			}
			ms, _ := schema.Migrations()
			for _, m := range ms {
				if m.Version == 24 {
					continue
				}
				err := e.DB.Exec(ctx, "INSERT INTO schema_migrations (version, name, applied_at) SELECT toUInt32(@version), @name, now()",
					clickhouse.Named("version", int64(m.Version)), clickhouse.Named("name", m.Name))
				if err != nil {
					t.Fatal(err)
				}
			}
			applied, err := schema.Apply(ctx, e.DB)
			if err != nil || !slices.Equal(applied, []string{"024_calls_args_validated.sql"}) {
				t.Fatalf("Apply after the crash: %v %v, want 024 recorded", applied, err)
			}
			if err := schema.Ready(ctx, e.DB); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestCallsTableHasEveryInsertedColumn(t *testing.T) {
	ctx := context.Background()
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			var cols []struct {
				Name string `ch:"name"`
			}
			if err := e.DB.Select(ctx, &cols, "SELECT name AS name FROM system.columns WHERE database = currentDatabase() AND table = 'calls' ORDER BY name"); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range cols {
				got = append(got, c.Name)
			}
			want := slices.Sorted(slices.Values(pipeline.CallColumns()))
			if !slices.Equal(got, want) {
				t.Errorf("calls columns\n got %v\nwant %v", got, want)
			}
			var c pipeline.Call
			if n := len(c.Values()); n != len(got) {
				t.Errorf("Call.Values has %d values for %d columns", n, len(got))
			}
		})
	}
}

// TestClassesRollupHoldsFailedOrMisflaggedCallsOnly: after every
// migration, calls_5m_classes is fed by calls_5m_classes_failed_mv alone
// (migration 010's view, which fed it every call, dropped by 019), which
// keeps the failed and the misflagged calls, each counted once, and no
// other.
func TestClassesRollupHoldsFailedOrMisflaggedCallsOnly(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	var calls []pipeline.Call
	add := func(n int, category string, failure, misflagged uint8) {
		for range n {
			i := len(calls)
			c := pipeline.Call{Time: at, TimeMs: at.UnixMilli() + int64(i), Tenant: "t_classes", Server: "s", Tool: "lookup",
				SessionKey: "k", CallID: uint64(1000 + i), HasResponse: 1, Category: category, IsFailure: failure,
				Misflagged: misflagged, IngestedMs: 1, DurationMs: -1, ContentBlocks: -1, IsError: -1}
			calls = append(calls, c)
		}
	}
	add(7, "OK", 0, 0)
	add(5, "EMPTY_RESULT", 0, 0)
	add(3, "RATE_LIMITED", 1, 0)
	add(2, "UPSTREAM_TIMEOUT", 1, 1) // a failure sent as a success
	add(4, "OK", 0, 1)               // a success flagged isError
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			var views []struct {
				Name string `ch:"name"`
			}
			if err := e.DB.Select(ctx, &views, "SELECT name FROM system.tables WHERE database = currentDatabase() AND name LIKE 'calls_5m_classes%mv' ORDER BY name"); err != nil {
				t.Fatal(err)
			}
			if len(views) != 1 || views[0].Name != "calls_5m_classes_failed_mv" {
				t.Fatalf("views feeding calls_5m_classes: %v, want calls_5m_classes_failed_mv only", views)
			}
			e.Insert(t, calls)
			e.Insert(t, calls[len(calls)-6:]) // copies count once
			var rows []struct {
				Category   string `ch:"category"`
				IsFailure  uint8  `ch:"is_failure"`
				Misflagged uint8  `ch:"misflagged"`
				N          uint64 `ch:"n"`
			}
			err := e.DB.Select(ctx, &rows, `SELECT toString(category) AS category, is_failure, misflagged, uniqExactMerge(calls) AS n
				FROM calls_5m_classes WHERE tenant = 't_classes'
				GROUP BY category, is_failure, misflagged ORDER BY category, is_failure, misflagged`)
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprint(rows)
			if want := "[{OK 0 1 4} {RATE_LIMITED 1 0 3} {UPSTREAM_TIMEOUT 1 1 2}]"; got != want {
				t.Errorf("calls_5m_classes holds %s, want %s", got, want)
			}
		})
	}
}

func TestMigrationNamesAreNumberedAndUnique(t *testing.T) {
	ms, err := schema.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint32]string{}
	for _, m := range ms {
		if prev, ok := seen[m.Version]; ok {
			t.Errorf("version %d used by %s and %s", m.Version, prev, m.Name)
		}
		seen[m.Version] = m.Name
	}
	if schema.Latest() != ms[len(ms)-1].Version {
		t.Errorf("Latest() = %d", schema.Latest())
	}
}
