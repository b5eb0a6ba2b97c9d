package gauges_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/gauges"
	"github.com/mcplens/mcplens/pipeline"
)

// TestDefinitionChangeGauge exports the latest definition change of each
// tool in the last 24 hours: search_docs changed twice (the later one
// counts), get_doc 30 hours ago (too old), lookup only ever had one
// definition (no change).
func TestDefinitionChangeGauge(t *testing.T) {
	seen := func(tool string, hash uint64, ago time.Duration) pipeline.ToolSighting {
		ts := now.Add(-ago)
		return pipeline.ToolSighting{Time: ts, TimeMs: ts.UnixMilli(), Tenant: "acme", Server: "kb", Tool: tool,
			DefinitionHash: hash, IngestedMs: 1}
	}
	rows := pipeline.ToolRows{Sightings: []pipeline.ToolSighting{
		seen("search_docs", 1, 40*time.Hour), seen("search_docs", 2, 5*time.Hour), seen("search_docs", 3, 2*time.Hour),
		seen("get_doc", 1, 40*time.Hour), seen("get_doc", 2, 30*time.Hour),
		seen("lookup", 1, 3*time.Hour), seen("lookup", 1, time.Hour),
	}}
	for _, e := range chtest.Engines(t) {
		e.InsertTools(t, rows)
		x, reg, _ := newExporter(t, e.DB, gauges.Config{})
		if err := x.Refresh(context.Background()); err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		want := map[string]float64{
			"server=kb,tenant=acme,tool=search_docs": float64(now.Add(-2 * time.Hour).Unix()),
		}
		if got := values(t, reg, "mcplens_tool_definition_changed_timestamp_seconds"); !equal(got, want) {
			t.Errorf("%s: got %v, want %v", e.Name, got, want)
		}
	}
}
