package dashboards_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/dashboards"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
)

// Definition versions of the fixture: before and after a change.
const (
	defBefore = uint64(0xa1)
	defAfter  = uint64(0xf2000000000000b2)
)

// definitionChanges are the tools of the MCPDefinitionChangeInvalidArguments
// scenario and of the panels, with when (before now) their definition
// changed; 0 means never.
var definitionChanges = map[string]time.Duration{
	"search_docs":      6 * hr,
	"changed_rise":     3 * hr,
	"changed_new":      3 * hr,
	"changed_steady":   3 * hr,
	"changed_few":      3 * hr,
	"changed_long_ago": 30 * hr,
	"unchanged_rise":   0,
}

// changedTool is a tool whose definition changed `change` before now:
// beforeN calls in the 24 hours before the change (beforeHits of them
// INVALID_ARGUMENT) and afterN calls since (afterHits invalid). A change of
// 0 places the "before" calls at 20 hours ago and after at the last hours.
func changedTool(tool string, change time.Duration, beforeN, beforeHits, afterN, afterHits int) []fx {
	pivot := change
	if pivot == 0 {
		pivot = 3 * hr
	}
	var out []fx
	for i := 0; i < beforeN; i++ {
		c := classify.OK
		if i < beforeHits {
			c = classify.InvalidArgument
		}
		out = append(out, fx{at: pivot + 5*minute + time.Duration(i)*10*minute, tool: tool, session: fmt.Sprintf("%s-b%d", tool, i), category: c})
	}
	step := (pivot - 2*minute) / time.Duration(max(afterN, 1))
	for i := 0; i < afterN; i++ {
		c := classify.OK
		if i < afterHits {
			c = classify.InvalidArgument
		}
		out = append(out, fx{at: minute + time.Duration(i)*step, tool: tool, session: fmt.Sprintf("%s-a%d", tool, i), category: c})
	}
	return out
}

// definitionChangeScenario is the scenario of MCPDefinitionChangeInvalidArguments.
func definitionChangeScenario() scenario {
	return scenario{
		rule: "MCPDefinitionChangeInvalidArguments",
		calls: concat(
			changedTool("changed_rise", 3*hr, 100, 2, 40, 8),      // 20 % vs 2 %: 10 x
			changedTool("changed_new", 3*hr, 100, 0, 20, 2),       // none before: capped at 1000
			changedTool("changed_steady", 3*hr, 100, 10, 40, 6),   // 15 % vs 10 %: 1.5 x
			changedTool("changed_few", 3*hr, 100, 2, 19, 10),      // 19 calls since the change
			changedTool("changed_long_ago", 30*hr, 60, 0, 40, 20), // changed more than 24 h ago
			changedTool("unchanged_rise", 0, 100, 2, 40, 20),      // no change at all
		),
		fire: map[string]float64{"changed_rise": 10, "changed_new": 1000},
	}
}

// toolRowsFixture is the definitions, sightings and schema violations of the
// panel fixture: every tool of definitionChanges seen 40 hours ago and, if
// it changed, again with a new definition at its change; violations of
// search_docs (department not in the enum, refused or answered empty) and
// a result that breaks its outputSchema.
func toolRowsFixture() pipeline.ToolRows {
	var rows pipeline.ToolRows
	seen := func(tool string, hash uint64, before time.Duration) {
		ts := now.Add(-before)
		rows.Sightings = append(rows.Sightings, pipeline.ToolSighting{Time: ts, TimeMs: ts.UnixMilli(), Tenant: "acme",
			Server: "kb", Tool: tool, DefinitionHash: hash, IngestedMs: 1})
	}
	def := func(tool string, hash uint64) {
		rows.Definitions = append(rows.Definitions, pipeline.ToolDef{Tenant: "acme", Server: "kb", Tool: tool, Hash: hash,
			InputSchema: `{"type":"object"}`, ReadOnlyHint: -1, DestructiveHint: -1, IdempotentHint: -1, OpenWorldHint: -1,
			Definition: "{}", IngestedMs: 1})
	}
	for _, tool := range sortedKeys(definitionChanges) {
		def(tool, defBefore)
		seen(tool, defBefore, 40*hr)
		if at := definitionChanges[tool]; at > 0 {
			def(tool, defAfter)
			seen(tool, defAfter, at)
			seen(tool, defAfter, at-30*minute)
		}
	}
	v := func(tool string, before time.Duration, id uint64, side, path, reason, suggestion string, cat classify.Category) {
		ts := now.Add(-before)
		row := pipeline.Violation{Time: ts, TimeMs: ts.UnixMilli(), Tenant: "acme", Server: "kb", Tool: tool, CallID: id,
			DefinitionHash: defAfter, Side: side, Path: path, Reason: reason, Suggestion: suggestion, Category: string(cat), IngestedMs: 1}
		if reason != "" {
			row.Detail = "allowed: finance, engineering, hr, sales, legal"
		}
		if cat.Failure() {
			row.IsFailure = 1
		}
		rows.Violations = append(rows.Violations, row)
	}
	for i := 0; i < 10; i++ {
		v("search_docs", time.Duration(i+1)*17*minute, uint64(100+i), pipeline.SideArguments, "", "", "", classify.OK)
	}
	for i := 0; i < 5; i++ {
		v("search_docs", time.Duration(i+1)*23*minute, uint64(200+i), pipeline.SideArguments, "department", pipeline.ReasonNotInEnum, "finance", classify.EmptyResult)
	}
	for i := 0; i < 2; i++ {
		v("search_docs", time.Duration(i+1)*31*minute, uint64(300+i), pipeline.SideArguments, "department", pipeline.ReasonNotInEnum, "finance", classify.InvalidArgument)
	}
	v("o'reilly_lookup", 90*minute, 400, pipeline.SideArguments, "", "", "", classify.OK)
	v("o'reilly_lookup", 90*minute, 400, pipeline.SideResult, "isbn", pipeline.ReasonPatternMismatch, "", classify.OK)
	return rows
}

// gAnnotation is an annotation query of a generated dashboard.
type gAnnotation struct {
	Name       string `json:"name"`
	Datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Target gTarget `json:"target"`
}

// TestAnnotationsOnBothEngines runs every ClickHouse annotation query of
// every generated dashboard, expanded as Grafana would, on the panel
// fixture: each returns a DateTime column named time and a string column
// named text (Grafana's default mapping), and with every filter at All
// the definition changes of the fixture.
func TestAnnotationsOnBothEngines(t *testing.T) {
	ds, err := dashboards.Build()
	if err != nil {
		t.Fatal(err)
	}
	type dash struct {
		g           gDashboard
		annotations []gAnnotation
	}
	var dashes []dash
	for _, d := range ds {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var x struct {
			Annotations struct {
				List []gAnnotation `json:"list"`
			} `json:"annotations"`
		}
		var g gDashboard
		if err := json.Unmarshal(b, &x); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatal(err)
		}
		dashes = append(dashes, dash{g, x.Annotations.List})
	}
	found := 0
	for _, d := range dashes {
		for _, a := range d.annotations {
			if a.Datasource.UID != "${datasource}" || a.Target.RawSQL == "" {
				t.Errorf("%s annotation %q: data source %q, sql %q", d.g.UID, a.Name, a.Datasource.UID, a.Target.RawSQL)
			}
			checkPanelSQL(t, d.g.UID+" annotation "+a.Name, a.Target.RawSQL, a.Target.Format)
			found++
		}
	}
	if found < 2 {
		t.Fatalf("%d annotation queries; want the definition changes on Schema quality and the tool drilldown", found)
	}
	r := macroRange{from: now.Add(-24 * time.Hour), to: now, interval: 5 * time.Minute}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, calls(panelFixture()))
			e.InsertTools(t, toolRowsFixture())
			for _, d := range dashes {
				for _, selName := range []string{"all", "narrowed"} {
					vars := selections(d.g)[selName]
					options := map[string][]string{}
					for _, v := range d.g.Templating.List {
						if sql := v.rawSQL(); sql != "" {
							_, rows := query(t, e, expandPanel(t, sql, vars, options, r))
							for _, row := range rows {
								options[v.Name] = append(options[v.Name], row[0].(string))
							}
						}
					}
					for _, a := range d.annotations {
						name := fmt.Sprintf("%s/%s/annotation %q", d.g.UID, selName, a.Name)
						sql := expandPanel(t, a.Target.RawSQL, vars, options, r)
						cols, rows := query(t, e, sql)
						if len(cols) < 2 || cols[0].Name != "time" || !strings.HasPrefix(cols[0].Type, "DateTime") ||
							cols[1].Name != "text" || !isString(cols[1].Type) {
							t.Errorf("%s: columns %v, want time (DateTime) and text (String) first", name, cols)
						}
						if d.g.UID == dashboards.SchemaQualityUID && selName == "all" {
							// search_docs and the four tools changed within the last 24 hours.
							if len(rows) != 5 {
								t.Errorf("%s: %d markers, want 5\n%s", name, len(rows), sql)
							}
						}
					}
				}
			}
		})
	}
}
