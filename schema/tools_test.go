package schema_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
)

func TestToolTablesHaveEveryInsertedColumn(t *testing.T) {
	ctx := context.Background()
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			for table, cols := range pipeline.ToolTableColumns() {
				var got []struct {
					Name string `ch:"name"`
				}
				if err := e.DB.Select(ctx, &got, "SELECT name AS name FROM system.columns WHERE database = currentDatabase() AND table = '"+table+"' ORDER BY name"); err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, c := range got {
					names = append(names, c.Name)
				}
				if want := slices.Sorted(slices.Values(cols)); !slices.Equal(names, want) {
					t.Errorf("%s columns\n got %v\nwant %v", table, names, want)
				}
			}
			var d pipeline.ToolDef
			var s pipeline.ToolSighting
			var v pipeline.Violation
			cols := pipeline.ToolTableColumns()
			if len(d.Values()) != len(cols["tool_definitions"]) || len(s.Values()) != len(cols["tool_sightings"]) ||
				len(v.Values()) != len(cols["call_violations"]) {
				t.Error("a row type's Values does not match its insert column list")
			}
		})
	}
}

// TestToolCatalogLoadsFromEveryEngine stores definition versions with a
// change in the middle and a return to the first version, then loads them
// into a fresh catalog: the version in force at each time must be the one
// the sightings say, on both engines (select_tool_changes.sql).
func TestToolCatalogLoadsFromEveryEngine(t *testing.T) {
	base := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	def := func(hash uint64, schema string) pipeline.ToolDef {
		return pipeline.ToolDef{Tenant: "acme", Server: "kb", Tool: "search_docs", Hash: hash, InputSchema: schema,
			ReadOnlyHint: -1, DestructiveHint: -1, IdempotentHint: -1, OpenWorldHint: -1, Definition: "{}", IngestedMs: 1}
	}
	sight := func(min int, hash uint64) pipeline.ToolSighting {
		at := base.Add(time.Duration(min) * time.Minute)
		return pipeline.ToolSighting{Time: at, TimeMs: at.UnixMilli(), Tenant: "acme", Server: "kb", Tool: "search_docs",
			DefinitionHash: hash, IngestedMs: 1}
	}
	rows := pipeline.ToolRows{
		Definitions: []pipeline.ToolDef{def(1<<63+1, `{"type":"object"}`), def(2, `{"type":"object","required":["q"]}`)},
		Sightings: []pipeline.ToolSighting{sight(0, 1<<63+1), sight(30, 1<<63+1), sight(60, 2), sight(90, 2), sight(120, 1<<63+1),
			sight(120, 1<<63+1)}, // the last one replayed
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.InsertTools(t, rows)
			tl := pipeline.NewTools(nil, e.DB, pipeline.ToolsConfig{}, prometheus.NewRegistry(), nil)
			if err := tl.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, tt := range []struct {
				min  int
				want uint64
			}{{-1, 0}, {0, 1<<63 + 1}, {59, 1<<63 + 1}, {60, 2}, {119, 2}, {120, 1<<63 + 1}, {600, 1<<63 + 1}} {
				got, ok := tl.InForce("acme", "kb", "search_docs", base.Add(time.Duration(tt.min)*time.Minute))
				if !ok {
					got = 0
				}
				if got != tt.want {
					t.Errorf("in force at minute %d: %d, want %d", tt.min, got, tt.want)
				}
			}
		})
	}
}
