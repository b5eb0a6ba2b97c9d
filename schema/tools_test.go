package schema_test

import (
	"context"
	"fmt"
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
	def := func(hash uint64, schema string) pipeline.ToolDef { return toolDef("search_docs", hash, schema) }
	sight := func(min int, hash uint64) pipeline.ToolSighting {
		return toolSighting("search_docs", base.Add(time.Duration(min)*time.Minute), hash)
	}
	rows := pipeline.ToolRows{
		Definitions: []pipeline.ToolDef{def(1<<63+1, `{"type":"object"}`), def(2, `{"type":"object","required":["q"]}`)},
		Sightings: []pipeline.ToolSighting{sight(0, 1<<63+1), sight(30, 1<<63+1), sight(60, 2), sight(90, 2), sight(120, 1<<63+1),
			sight(120, 1<<63+1)}, // the last one replayed
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			tl := loadedCatalog(t, e, rows)
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

// TestToolCatalogLoadsALongHistory: a tool sighted 30,000 times (hourly for
// three and a half years, or months of a fleet of ingest processes) whose
// definition flips every 1,000 sightings, and a tool sighted as two versions
// at the same instant by two processes (the larger hash is in force). Ingest loads the change points at
// start and every -tool-refresh; the former query copied a tool's whole
// history for every sighting and asked both engines for gigabytes here,
// past their memory limits, so ingest would not have started.
func TestToolCatalogLoadsALongHistory(t *testing.T) {
	const n, run = 30_000, 1_000
	base := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	var rows pipeline.ToolRows
	for _, h := range []uint64{1, 2, 10, 20} {
		rows.Definitions = append(rows.Definitions, toolDef("search_docs", h, fmt.Sprintf(`{"title":"v%d"}`, h)),
			toolDef("tie", h, fmt.Sprintf(`{"title":"v%d"}`, h)))
	}
	for i := range n {
		rows.Sightings = append(rows.Sightings, toolSighting("search_docs", base.Add(time.Duration(i-n)*time.Hour), uint64(1+i/run%2)))
	}
	rows.Sightings = append(rows.Sightings, toolSighting("tie", base, 20), toolSighting("tie", base, 10))
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			tl := loadedCatalog(t, e, rows)
			for i := 0; i < n; i += run / 2 {
				want := uint64(1 + i/run%2)
				if got, ok := tl.InForce("acme", "kb", "search_docs", base.Add(time.Duration(i-n)*time.Hour)); !ok || got != want {
					t.Fatalf("in force at sighting %d: %d (%v), want %d", i, got, ok, want)
				}
			}
			if got, _ := tl.InForce("acme", "kb", "tie", base); got != 20 {
				t.Errorf("in force at the tie: %d, want the larger hash, 20", got)
			}
		})
	}
}

// toolDef is a definition of acme's kb tool with input schema schema and no
// hints.
func toolDef(tool string, hash uint64, schema string) pipeline.ToolDef {
	return pipeline.ToolDef{Tenant: "acme", Server: "kb", Tool: tool, Hash: hash, InputSchema: schema,
		ReadOnlyHint: -1, DestructiveHint: -1, IdempotentHint: -1, OpenWorldHint: -1, Definition: "{}", IngestedMs: 1}
}

// toolSighting is a sighting of acme's kb tool at at.
func toolSighting(tool string, at time.Time, hash uint64) pipeline.ToolSighting {
	return pipeline.ToolSighting{Time: at, TimeMs: at.UnixMilli(), Tenant: "acme", Server: "kb", Tool: tool,
		DefinitionHash: hash, IngestedMs: 1}
}

// loadedCatalog stores rows on e and loads them into a fresh catalog, as
// ingest does at start.
func loadedCatalog(t *testing.T, e *chtest.Engine, rows pipeline.ToolRows) *pipeline.Tools {
	t.Helper()
	e.InsertTools(t, rows)
	tl := pipeline.NewTools(nil, e.DB, pipeline.ToolsConfig{}, prometheus.NewRegistry(), nil)
	if err := tl.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tl
}
