package schema_test

import (
	"context"
	"os"
	"slices"
	"testing"

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
				if err := e.DB.Exec(ddlCtx, m.SQL); err != nil {
					t.Errorf("re-running %s: %v", m.Name, err)
				}
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
