package dashboards_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/dashboards"
)

// gDashboard is the part of a generated dashboard the SQL tests read, from
// its JSON, as Grafana would.
type gDashboard struct {
	UID        string `json:"uid"`
	Templating struct {
		List []gVariable `json:"list"`
	} `json:"templating"`
	Panels []gPanel `json:"panels"`
}

type gVariable struct {
	Name    string          `json:"name"`
	Type    string          `json:"type"`
	Query   json.RawMessage `json:"query"`
	Multi   bool            `json:"multi"`
	Hide    int             `json:"hide"`
	Current struct {
		Value json.RawMessage `json:"value"`
	} `json:"current"`
}

// bound reports a hidden query variable whose one value panels use as a
// constant (build.go, boundVariable): Grafana computes it from the time
// range, so the tests do too (resolveBounds) instead of choosing it.
func (v gVariable) bound() bool { return v.Type == "query" && v.Hide == 2 }

// bounds returns the rawSql of each of d's bound variables by name.
func (d gDashboard) bounds() map[string]string {
	out := map[string]string{}
	for _, v := range d.Templating.List {
		if v.bound() {
			out[v.Name] = v.rawSQL()
		}
	}
	return out
}

type gPanel struct {
	ID          uint32    `json:"id"`
	Type        string    `json:"type"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Interval    string    `json:"interval"`
	TimeFrom    string    `json:"timeFrom"`
	TimeShift   string    `json:"timeShift"`
	Targets     []gTarget `json:"targets"`
	// Transformations are applied in order to the targets' frames.
	Transformations []struct {
		ID string `json:"id"`
	} `json:"transformations"`
	// FieldConfig holds the columns' links (build.go, toolLinks,
	// callsLinks), whose ${__data.fields.<column>} must name a column.
	FieldConfig any `json:"fieldConfig"`
	Options     struct {
		ReduceOptions struct {
			Calcs []string `json:"calcs"`
		} `json:"reduceOptions"`
	} `json:"options"`
}

type gTarget struct {
	RefID      string `json:"refId"`
	Datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	RawSQL string `json:"rawSql"`
	Format int    `json:"format"`
	Expr   string `json:"expr"`
}

// rawSQL returns a query variable's SQL ("" for other variables).
func (v gVariable) rawSQL() string {
	var q struct {
		RawSQL string `json:"rawSql"`
	}
	if v.Type != "query" || json.Unmarshal(v.Query, &q) != nil {
		return ""
	}
	return q.RawSQL
}

func generatedDashboards(t testing.TB) []gDashboard {
	t.Helper()
	ds, err := dashboards.Build()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]gDashboard, len(ds))
	for i, d := range ds {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// panelFixture is every scenario's calls plus the extras: enough for every
// panel and variable query to return rows with every filter at All.
func panelFixture() []fx {
	var all []fx
	for _, s := range scenarios() {
		all = append(all, s.calls...)
	}
	return append(all, extraCalls()...)
}

// selections are the variable values each panel query runs with: every
// filter at All, and narrowed to one tenant and server and two tools (one
// whose name needs quoting). The drilldown's single tool takes one value.
func selections(d gDashboard) map[string]map[string]selection {
	out := map[string]map[string]selection{"all": {}, "narrowed": {}}
	for _, v := range d.Templating.List {
		switch {
		case v.bound():
			// Computed from the range: resolveBounds.
		case v.Type == "query":
			out["all"][v.Name] = all()
			narrowed := map[string]selection{
				"tenant":  values("acme"),
				"server":  values("kb"),
				"tool":    values("search_docs", "o'reilly_lookup"),
				"arg_key": values("department"),
			}[v.Name]
			if !v.Multi {
				narrowed = values("search_docs")
				out["all"][v.Name] = values("o'reilly_lookup")
			}
			out["narrowed"][v.Name] = narrowed
		case v.Type == "custom" && v.Multi:
			// The drilldown's categories: All, and the one the narrowed
			// argument value's calls have.
			out["all"][v.Name] = all()
			out["narrowed"][v.Name] = map[string]selection{"category": values("EMPTY_RESULT")}[v.Name]
		case v.Type == "textbox":
			out["all"][v.Name] = values("")
			narrowed, ok := map[string]selection{"arg_value": values("finace")}[v.Name]
			if !ok {
				narrowed = values("")
			}
			out["narrowed"][v.Name] = narrowed
		case v.Type == "custom":
			var cur string
			_ = json.Unmarshal(v.Current.Value, &cur)
			out["all"][v.Name], out["narrowed"][v.Name] = values(cur), values(cur)
		}
	}
	return out
}

// TestSQLOnBothEngines inserts one fixture (every alert scenario plus
// extras, and the tool definitions and schema violations of tools_test.go)
// through the real writer on ClickHouse 18.16 and on 26.x, then
// runs every panel and variable query (testPanels) and evaluates every
// alert rule (testAlerts) on it; then again with the complete hours
// folded (compact.RollupHours) and their retry chains (compact.RollupChains).
func TestSQLOnBothEngines(t *testing.T) {
	ds := generatedDashboards(t)
	rules := provisionedRules(t)
	fixture := calls(panelFixture())
	for _, e := range chtest.Engines(t) {
		e.Insert(t, fixture)
		e.InsertTools(t, toolRowsFixture())
		t.Run(e.Name+"/panels", func(t *testing.T) { testPanels(t, e, ds) })
		t.Run(e.Name+"/alerts", func(t *testing.T) { testAlerts(t, e, rules) })
		// Again with the complete hours folded into plain counts, which
		// the baselines and the spikes panel's range read instead of
		// calls_5m's states and the raw calls.
		if res, err := compact.RollupHours(context.Background(), e.DB, time.Now(), time.Since(now)+30*24*time.Hour, 0); err != nil || len(res.Folded) < 24 {
			t.Fatalf("%s: fold: %v %v, want the fixture's hours folded", e.Name, res, err)
		}
		if res, err := compact.RollupChains(context.Background(), e.DB, time.Now(), time.Since(now)+30*24*time.Hour, 0); err != nil || len(res.Folded) < 24 {
			t.Fatalf("%s: fold chains: %v %v, want the fixture's hours folded", e.Name, res, err)
		}
		t.Run(e.Name+"/panels over folded hours", func(t *testing.T) { testPanels(t, e, ds) })
		t.Run(e.Name+"/alerts over folded hours", func(t *testing.T) { testAlerts(t, e, rules) })
	}
}

// testPanels runs every ClickHouse panel target and variable query of every
// generated dashboard, expanded exactly as the plugin would
// (expand_test.go). It checks the shape Grafana needs: time-series targets
// return a DateTime column named time first, sorted ascending, one row per
// time and label set, with numeric values; tables and stats return their
// columns; variable queries return one string column. With every filter at
// All each query must return rows, so a query that silently matches nothing
// fails. No panel needs the modern engine: buckets are written as
// toDateTime(intDiv(toUInt32(ts), $__interval_s) * $__interval_s) instead of
// $__timeInterval, which 18.16 cannot run. Identical expanded queries (a
// panel reused on several dashboards) run once.
func testPanels(t *testing.T, e *chtest.Engine, ds []gDashboard) {
	checkPanels(t, ds, cached(func(sql string) ([]column, [][]any) { return query(t, e, sql) }))
}

// cached runs each distinct query once.
func cached(run func(sql string) ([]column, [][]any)) func(sql string) ([]column, [][]any) {
	type result struct {
		cols []column
		rows [][]any
	}
	cache := map[string]result{}
	return func(sql string) ([]column, [][]any) {
		if r, ok := cache[sql]; ok {
			return r.cols, r.rows
		}
		cols, rows := run(sql)
		cache[sql] = result{cols, rows}
		return cols, rows
	}
}

// checkPanels is testPanels with the queries run by run.
func checkPanels(t *testing.T, ds []gDashboard, run func(sql string) ([]column, [][]any)) {
	r := macroRange{from: now.Add(-24 * time.Hour), to: now, interval: 5 * time.Minute}
	for _, d := range ds {
		for _, selName := range []string{"all", "narrowed"} {
			vars := selections(d)[selName]
			options := map[string][]string{}
			for _, v := range d.Templating.List {
				if v.Type == "custom" {
					var list string
					_ = json.Unmarshal(v.Query, &list)
					options[v.Name] = strings.Split(list, ",")
				}
				sql := v.rawSQL()
				if sql == "" {
					continue
				}
				name := fmt.Sprintf("%s/%s/variable %s", d.UID, selName, v.Name)
				cols, rows := run(expandPanel(t, sql, vars, options, r))
				if len(cols) != 1 || !isString(cols[0].Type) {
					t.Errorf("%s: want one string column, got %v", name, cols)
				}
				if v.bound() {
					// Grafana selects the one option of a variable with no
					// current value; panels get it raw.
					if len(rows) != 1 {
						t.Fatalf("%s: %d rows, want the bound's one value", name, len(rows))
					}
					vars[v.Name] = values(rows[0][0].(string))
				}
				if selName == "all" && len(rows) == 0 {
					t.Errorf("%s: no values", name)
				}
				for _, row := range rows {
					options[v.Name] = append(options[v.Name], row[0].(string))
				}
			}
			for _, p := range d.Panels {
				name := fmt.Sprintf("%s/%s/panel %d %q", d.UID, selName, p.ID, p.Title)
				var merged mergedFrames
				for _, tg := range p.Targets {
					if tg.Datasource.Type != dashboards.ClickHousePluginID {
						continue
					}
					pr := r
					if p.Interval != "" {
						// Grafana uses the panel's minimum interval when the
						// automatic one is shorter.
						min, err := time.ParseDuration(p.Interval)
						if err != nil {
							t.Fatalf("%s: interval %q: %v", name, p.Interval, err)
						}
						pr.interval = max(pr.interval, min)
					}
					sql := expandPanel(t, tg.RawSQL, vars, options, pr)
					cols, rows := run(sql)
					if selName == "all" && len(rows) == 0 {
						t.Errorf("%s: query %s: no rows on the fixture\n%s", name, tg.RefID, sql)
					}
					merged.add(t, name, tg, cols, rows)
				}
				if len(merged.refs) == 0 {
					continue
				}
				merged.check(t, name, p)
				checkLinkFields(t, name, p, merged.cols)
				checkShape(t, name, p, merged.format, merged.cols, merged.rows)
			}
		}
	}
}

// mergedFrames is what a panel draws from its ClickHouse queries: the one
// query's result, or with Grafana's merge transformation (build.go,
// mergeRows) the rows of every query in one table, the first query's
// first. Merging needs the same columns in every query.
type mergedFrames struct {
	refs   []string
	format int
	cols   []column
	rows   [][]any
}

func (m *mergedFrames) add(t *testing.T, name string, tg gTarget, cols []column, rows [][]any) {
	t.Helper()
	if len(m.refs) > 0 {
		if !slices.Equal(cols, m.cols) {
			t.Errorf("%s: query %s has columns %v, query %s %v: merged rows would not line up", name, tg.RefID, cols, m.refs[0], m.cols)
		}
		if tg.Format != m.format {
			t.Errorf("%s: query %s has format %d, query %s %d", name, tg.RefID, tg.Format, m.refs[0], m.format)
		}
	}
	if slices.Contains(m.refs, tg.RefID) {
		t.Errorf("%s: two queries named %s", name, tg.RefID)
	}
	m.refs = append(m.refs, tg.RefID)
	m.format, m.cols = tg.Format, cols
	m.rows = append(m.rows, rows...)
}

// check fails a panel of several queries that does not merge them first, or
// whose queries return rows that the merge would show once.
func (m *mergedFrames) check(t *testing.T, name string, p gPanel) {
	t.Helper()
	if len(m.refs) < 2 {
		return
	}
	if len(p.Transformations) == 0 || p.Transformations[0].ID != "merge" {
		t.Errorf("%s: queries %v without the merge transformation first: Grafana would draw them apart", name, m.refs)
	}
	if m.format == dashboards.FormatTimeSeries {
		t.Errorf("%s: time series merged into one table", name)
	}
	seen := map[string]bool{}
	for _, row := range canonicalRows(m.rows) {
		if seen[row] {
			t.Errorf("%s: row %s twice: the merge would show it once", name, row)
		}
		seen[row] = true
	}
}

// checkShape checks a result against what the panel needs from it.
func checkShape(t *testing.T, name string, p gPanel, format int, cols []column, rows [][]any) {
	t.Helper()
	numeric := 0
	for _, c := range cols {
		if isNumeric(c.Type) {
			numeric++
		}
	}
	if numeric == 0 {
		t.Errorf("%s: no numeric column in %v", name, cols)
	}
	if p.Type == "stat" && len(rows) > 1 && !slices.Equal(p.Options.ReduceOptions.Calcs, []string{"count"}) {
		t.Errorf("%s: a stat wants one row, got %d", name, len(rows))
	}
	if format != dashboards.FormatTimeSeries {
		return
	}
	if cols[0].Name != "time" || !strings.HasPrefix(cols[0].Type, "DateTime") {
		t.Fatalf("%s: first column %v, want time DateTime", name, cols[0])
	}
	for _, c := range cols[1:] {
		if !isNumeric(c.Type) && !isString(c.Type) {
			t.Errorf("%s: column %v is neither a label nor a value", name, c)
		}
	}
	seen := map[string]bool{}
	var prev time.Time
	for i, row := range rows {
		ts, ok := row[0].(time.Time)
		if !ok {
			t.Fatalf("%s: row %d: time %v", name, i, row[0])
		}
		if ts.Before(prev) {
			t.Errorf("%s: row %d: time %s before %s; Grafana needs ascending time", name, i, ts, prev)
		}
		prev = ts
		key := ts.String()
		for j, c := range cols[1:] {
			if isString(c.Type) {
				key += "|" + row[j+1].(string)
			}
		}
		if seen[key] {
			t.Errorf("%s: time and labels %s appear twice; the long-to-wide conversion would fail", name, key)
		}
		seen[key] = true
	}
}

// dataFieldRe is a column a link takes from the clicked row (a table's
// __data.fields, a series' __field.labels: its label columns).
var dataFieldRe = regexp.MustCompile(`__(?:data\.fields|field\.labels)\.(\w+)`)

// checkLinkFields checks that every column a link of p takes from the
// clicked row or series (${__data.fields.<name>}, ${__field.labels.<name>}
// in its title or URL) is a column of p's result: Grafana puts an empty
// value for one that is not.
func checkLinkFields(t *testing.T, name string, p gPanel, cols []column) {
	t.Helper()
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		case string:
			for _, m := range dataFieldRe.FindAllStringSubmatch(x, -1) {
				if !slices.ContainsFunc(cols, func(c column) bool { return c.Name == m[1] }) {
					t.Errorf("%s: a link takes the row's %s, which is not a column of the panel (%v)", name, m[1], cols)
				}
			}
		}
	}
	walk(p.FieldConfig)
}
