package dashboards_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/alerting"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/prometheus/common/model"

	"github.com/mcplens/mcplens/dashboards"
)

var update = flag.Bool("update", false, "rewrite the generated dashboards, alert rules and previews")

// TestGeneratedFilesAreCurrent regenerates every file and compares it with
// the committed one: the committed JSON is what Grafana provisions, so a
// builder change without regeneration must fail. -update rewrites them.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := dashboards.Files()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		for _, dir := range []string{dashboards.GeneratedDashboardsDir, filepath.Dir(dashboards.GeneratedAlertsFile), dashboards.PreviewsDir} {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		}
		for _, path := range sortedKeys(files) {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, files[path], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	const fix = "run `go test ./dashboards -update` and review the diff"
	for _, path := range sortedKeys(files) {
		got, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			t.Errorf("dashboards/%s is missing; %s", path, fix)
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, files[path]) {
			t.Errorf("dashboards/%s is stale; %s", path, fix)
		}
	}
	for _, dir := range []string{dashboards.GeneratedDashboardsDir, filepath.Dir(dashboards.GeneratedAlertsFile), dashboards.PreviewsDir} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("%v; %s", err, fix)
		}
		for _, e := range entries {
			if _, ok := files[dir+"/"+e.Name()]; !ok {
				t.Errorf("dashboards/%s/%s is no longer generated; %s", dir, e.Name(), fix)
			}
		}
	}
}

// strictOK reports whether a strict unmarshal succeeded. The SDK returns a
// typed-nil cog.BuildErrors on success, so err != nil is always true.
func strictOK(err error) (bool, string) {
	var be cog.BuildErrors
	if errors.As(err, &be) {
		return len(be) == 0, be.Error()
	}
	return err == nil, fmt.Sprint(err)
}

// TestDashboardsRoundTrip reads every generated dashboard back with the
// SDK: strictly (unknown or missing fields, bad types and, with
// ClickHouseQuery registered, unknown target fields are errors), then
// leniently, re-marshalled byte for byte.
func TestDashboardsRoundTrip(t *testing.T) {
	dashboards.RegisterPlugins()
	ds, err := dashboards.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if ok, msg := strictOK((&dashboard.Dashboard{}).UnmarshalJSONStrict(b)); !ok {
			t.Errorf("%s: strict unmarshal: %s", *d.Uid, msg)
		}
		var back dashboard.Dashboard
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", *d.Uid, err)
		}
		again, err := json.Marshal(back)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, again) {
			t.Errorf("%s: lenient round trip changed the JSON", *d.Uid)
		}
	}
	// The strict check does reject what Grafana's plugin would not know.
	bad := []byte(`{"title":"x","panels":[{"type":"table","id":1,"targets":[{"refId":"A","datasource":{"type":"grafana-clickhouse-datasource","uid":"x"},"rawSql":"SELECT 1","format":1,"editorType":"sql","pluginVersion":"4.20.0","bogus":1}]}]}`)
	if ok, _ := strictOK((&dashboard.Dashboard{}).UnmarshalJSONStrict(bad)); ok {
		t.Error("strict unmarshal accepted an unknown ClickHouse target field")
	}
}

var (
	varRefRe = regexp.MustCompile(`\$\{(\w+)(?:[:.][^}]*)?\}|\$(\w+)|\[\[(\w+)`)
	avoided  = []string{"$__timeFrom", "$__timeTo", "$__timeGroup", "$__table", "$__column", "$__interval_ms", "$__timeInterval", "$__timeFilter_ms", "$__fromTime_ms", "$__toTime_ms", "$__columns", "$__rateColumns", "$__lttb"}
)

// usedVariables lists the template variables text refers to, without
// Grafana's and the plugin's own ($__…).
func usedVariables(text string) []string {
	var out []string
	for _, m := range varRefRe.FindAllStringSubmatch(text, -1) {
		name := m[1] + m[2] + m[3]
		if !strings.HasPrefix(name, "__") {
			out = append(out, name)
		}
	}
	return out
}

// TestDashboardsLint checks the rules of the reference note (§10) and of
// this project on every generated dashboard.
func TestDashboardsLint(t *testing.T) {
	ds, err := dashboards.Build()
	if err != nil {
		t.Fatal(err)
	}
	panelsByUID := map[string]map[uint32]bool{}
	globalIDs := map[uint32]string{}
	variablesByUID := map[string]map[string]bool{}
	for _, d := range ds {
		variablesByUID[*d.Uid] = map[string]bool{}
		for _, v := range d.Templating.List {
			variablesByUID[*d.Uid][v.Name] = true
		}
	}
	for _, d := range ds {
		uid := *d.Uid
		if _, dup := panelsByUID[uid]; dup || uid == "" || len(uid) > 40 {
			t.Errorf("dashboard uid %q: empty, duplicate or longer than 40", uid)
		}
		panelsByUID[uid] = map[uint32]bool{}
		b, _ := json.Marshal(d)
		var g gDashboard
		_ = json.Unmarshal(b, &g)

		defined := map[string]bool{}
		used := map[string]bool{}
		for _, v := range g.Templating.List {
			defined[v.Name] = true
			for _, u := range usedVariables(v.rawSQL()) {
				used[u] = true
			}
		}
		var cells [][2]uint32
		for _, p := range d.Panels {
			var id uint32
			var title, desc string
			var grid *dashboard.GridPos
			if p.RowPanel != nil {
				id, title, grid, desc = p.RowPanel.Id, deref(p.RowPanel.Title), p.RowPanel.GridPos, "row"
			} else {
				id, title, grid, desc = deref(p.Panel.Id), deref(p.Panel.Title), p.Panel.GridPos, deref(p.Panel.Description)
			}
			name := fmt.Sprintf("%s panel %d %q", uid, id, title)
			if id == 0 {
				t.Errorf("%s: no id", name)
			}
			if other, dup := globalIDs[id]; dup {
				t.Errorf("%s: id also used in %s", name, other)
			}
			globalIDs[id] = uid
			panelsByUID[uid][id] = true
			if title == "" || p.Panel != nil && (len(desc) < 40 || !strings.HasSuffix(desc, ".")) {
				t.Errorf("%s: needs a title and a description of what it means and what to do (a sentence or more)", name)
			}
			if grid == nil || grid.X+grid.W > 24 || grid.W == 0 || grid.H == 0 {
				t.Errorf("%s: grid position %+v outside the 24 columns", name, grid)
			} else {
				for y := grid.Y; y < grid.Y+grid.H; y++ {
					for x := grid.X; x < grid.X+grid.W; x++ {
						if slices.Contains(cells, [2]uint32{x, y}) {
							t.Errorf("%s: overlaps another panel at %d,%d", name, x, y)
						}
						cells = append(cells, [2]uint32{x, y})
					}
				}
			}
		}
		for _, p := range g.Panels {
			name := fmt.Sprintf("%s panel %d %q", uid, p.ID, p.Title)
			raw, _ := json.Marshal(rawPanel(t, b, p.ID))
			for _, u := range usedVariables(string(raw)) {
				used[u] = true
			}
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: no targets", name)
			}
			checkPanelOptions(t, name, p.Type, rawPanel(t, b, p.ID))
			for _, tg := range p.Targets {
				if tg.Datasource.UID != "${datasource}" && tg.Datasource.UID != "${prometheus}" {
					t.Errorf("%s: target data source %q is not a dashboard variable", name, tg.Datasource.UID)
				}
				if tg.Datasource.Type == dashboards.ClickHousePluginID {
					checkPanelSQL(t, name, tg.RawSQL, tg.Format)
				}
			}
			for _, link := range linksOf(rawPanel(t, b, p.ID)) {
				checkLink(t, name, link, panelsByUIDFromBuilders(t))
				checkLinkVariables(t, name, link, variablesByUID)
			}
		}
		for u := range used {
			if !defined[u] {
				t.Errorf("%s: variable $%s is used but not defined", uid, u)
			}
		}
		for v := range defined {
			if !used[v] {
				t.Errorf("%s: variable $%s is defined but not used", uid, v)
			}
		}
	}
}

// checkPanelSQL checks a ClickHouse target against what the plugin and
// 18.16 need (reference §5.2, §6, §10).
func checkPanelSQL(t *testing.T, name, sql string, format int) {
	t.Helper()
	if format != dashboards.FormatTimeSeries && format != dashboards.FormatTable {
		t.Errorf("%s: format %d", name, format)
	}
	if format == dashboards.FormatTimeSeries && !regexp.MustCompile(`ORDER BY time\b[^\n]*\s*$`).MatchString(sql) {
		t.Errorf("%s: a time series must end with ORDER BY time", name)
	}
	for _, a := range avoided {
		if regexp.MustCompile(regexp.QuoteMeta(a) + `\b`).MatchString(sql) {
			t.Errorf("%s: uses %s, which differs between plugin versions or needs a newer ClickHouse", name, a)
		}
	}
	checkSQLText(t, name, sql)
	for _, m := range regexp.MustCompile(`\$__conditionalAll\(`).FindAllStringIndex(sql, -1) {
		args := macroArgs(sql[m[1]-1:])
		if len(args) != 2 {
			t.Errorf("%s: $__conditionalAll with %d arguments", name, len(args))
			continue
		}
		if !regexp.MustCompile(`^\s*(\$\w+|\$\{\w+\})$`).MatchString(args[1]) {
			t.Errorf("%s: second argument of $__conditionalAll %q must be a bare $var", name, args[1])
		}
	}
}

// checkSQLText checks what every panel and alert SQL must avoid: a "$" in a
// comment or string literal (older plugins expand macros there, the
// frontend substitutes variables there) but a percent-encoded variable, and
// nested macros.
func checkSQLText(t *testing.T, name, sql string) {
	t.Helper()
	comments, literals := sqlTokens(sql)
	for _, c := range comments {
		if strings.Contains(c, "$") {
			t.Errorf("%s: $ in a comment: %q", name, c)
		}
	}
	for _, lit := range literals {
		// One form is allowed: a text variable percent-encoded, whose
		// value has only unreserved characters and %XX once the frontend
		// has put it in, so no quote or backslash can end the literal.
		if percentEncoded.MatchString(lit) {
			continue
		}
		if strings.Contains(lit, "$") {
			t.Errorf("%s: $ in a string literal %s", name, lit)
		}
	}
	for _, m := range regexp.MustCompile(`\$__\w+\(`).FindAllStringIndex(sql, -1) {
		if args := macroArgs(sql[m[1]-1:]); strings.Contains(strings.Join(args, ","), "$__") {
			t.Errorf("%s: nested macro in %s", name, sql[m[0]:m[1]])
		}
	}
}

var percentEncoded = regexp.MustCompile(`^'\$\{\w+:percentencode\}'$`)

// sqlTokens returns the comments and the quoted string literals of sql.
func sqlTokens(sql string) (comments, literals []string) {
	for i := 0; i < len(sql); i++ {
		switch {
		case strings.HasPrefix(sql[i:], "--"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				j = len(sql) - i
			}
			comments = append(comments, sql[i:i+j])
			i += j
		case sql[i] == '\'':
			j := i + 1
			for j < len(sql) && sql[j] != '\'' {
				if sql[j] == '\\' {
					j++
				}
				j++
			}
			literals = append(literals, sql[i:min(j+1, len(sql))])
			i = j
		}
	}
	return comments, literals
}

func checkPanelOptions(t *testing.T, name, typ string, p map[string]any) {
	t.Helper()
	opts, _ := p["options"].(map[string]any)
	switch typ {
	case "timeseries":
		legend, _ := opts["legend"].(map[string]any)
		tooltip, _ := opts["tooltip"].(map[string]any)
		if legend["showLegend"] != true || tooltip["mode"] == "" {
			t.Errorf("%s: set the legend and the tooltip (SDK defaults hide the legend)", name)
		}
	case "table":
		footer, _ := opts["footer"].(map[string]any)
		if footer["reducer"] == nil {
			t.Errorf("%s: table footer reducer is null; strict round trips fail", name)
		}
	}
	fc, _ := p["fieldConfig"].(map[string]any)
	defaults, _ := fc["defaults"].(map[string]any)
	if _, ok := defaults["thresholds"]; !ok {
		t.Errorf("%s: no thresholds", name)
	}
	if typ != "table" {
		if u, _ := defaults["unit"].(string); u == "" {
			t.Errorf("%s: no unit", name)
		}
	}
}

func rawPanel(t *testing.T, dashboardJSON []byte, id uint32) map[string]any {
	t.Helper()
	var d struct {
		Panels []map[string]any `json:"panels"`
	}
	if err := json.Unmarshal(dashboardJSON, &d); err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Panels {
		if n, ok := p["id"].(float64); ok && uint32(n) == id {
			return p
		}
	}
	t.Fatalf("panel %d not found", id)
	return nil
}

// linksOf returns every URL in a panel: its links and the data links of its
// field overrides.
func linksOf(p map[string]any) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if u, ok := x["url"].(string); ok {
				out = append(out, u)
			}
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(p)
	return out
}

var linkRe = regexp.MustCompile(`^/d/([\w-]+)\?(?:viewPanel=(\d+))?`)

// checkLink checks that a /d/<uid>?viewPanel=<id> link points at a
// generated dashboard and panel.
func checkLink(t *testing.T, name, url string, panels map[string]map[uint32]bool) {
	t.Helper()
	m := linkRe.FindStringSubmatch(url)
	if m == nil {
		t.Errorf("%s: link %q is not a /d/<uid>? link", name, url)
		return
	}
	ids, ok := panels[m[1]]
	if !ok {
		t.Errorf("%s: link %q: no dashboard %s", name, url, m[1])
		return
	}
	if m[2] != "" {
		var id uint32
		fmt.Sscan(m[2], &id)
		if !ids[id] {
			t.Errorf("%s: link %q: no panel %d in %s", name, url, id, m[1])
		}
	}
}

// linkVarRe is a variable a link sets in the dashboard it opens.
var linkVarRe = regexp.MustCompile(`[?&]var-(\w+)=`)

// checkLinkVariables checks that every variable a link sets (var-<name>=)
// is one of the dashboard it opens: Grafana ignores the others.
func checkLinkVariables(t *testing.T, name, url string, variables map[string]map[string]bool) {
	t.Helper()
	m := linkRe.FindStringSubmatch(url)
	if m == nil {
		return // checkLink reports it
	}
	for _, v := range linkVarRe.FindAllStringSubmatch(url, -1) {
		if !variables[m[1]][v[1]] {
			t.Errorf("%s: link %q sets $%s, which %s does not have", name, url, v[1], m[1])
		}
	}
}

func panelsByUIDFromBuilders(t *testing.T) map[string]map[uint32]bool {
	t.Helper()
	out := map[string]map[uint32]bool{}
	for _, g := range generatedDashboards(t) {
		out[g.UID] = map[uint32]bool{}
		for _, p := range g.Panels {
			out[g.UID][p.ID] = true
		}
	}
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// TestAlertRulesLint checks the rule groups the SDK builds (strict and
// lenient round trips) and the provisioning file generated from them.
func TestAlertRulesLint(t *testing.T) {
	dashboards.RegisterPlugins()
	groups, err := dashboards.RuleGroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		b, err := json.Marshal(g)
		if err != nil {
			t.Fatal(err)
		}
		if ok, msg := strictOK((&alerting.RuleGroup{}).UnmarshalJSONStrict(b)); !ok {
			t.Errorf("rule group %s: strict unmarshal: %s", deref(g.Title), msg)
		}
		if err := g.Validate(); err != nil {
			t.Errorf("rule group %s: %v", deref(g.Title), err)
		}
		var back alerting.RuleGroup
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if again, _ := json.Marshal(back); !bytes.Equal(b, again) {
			t.Errorf("rule group %s: lenient round trip changed the JSON", deref(g.Title))
		}
	}

	panels := panelsByUIDFromBuilders(t)
	runbook, err := os.ReadFile("../docs/alerts.md")
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]bool{}
	for title, r := range provisionedRules(t) {
		if r.UID == "" || uids[r.UID] || len(r.UID) > 40 {
			t.Errorf("%s: uid %q empty, duplicate or too long", title, r.UID)
		}
		uids[r.UID] = true
		if _, err := model.ParseDuration(r.For); err != nil {
			t.Errorf("%s: for %q: %v", title, r.For, err)
		}
		refs := map[string]bool{}
		for _, q := range r.Data {
			switch q.DatasourceUID {
			case "__expr__":
				if !refs[q.Model.Expression] {
					t.Errorf("%s: %s reads %s, not defined before it", title, q.RefID, q.Model.Expression)
				}
			case dashboards.ClickHouseDatasourceUID:
				if q.RelativeTimeRange.From <= q.RelativeTimeRange.To {
					t.Errorf("%s: relative time range %+v", title, q.RelativeTimeRange)
				}
				checkSQLText(t, title, q.Model.RawSQL)
				if u := usedVariables(q.Model.RawSQL); len(u) > 0 {
					t.Errorf("%s: alert queries get no template variables, but the SQL uses %v", title, u)
				}
			default:
				t.Errorf("%s: data source uid %q is not a provisioned one", title, q.DatasourceUID)
			}
			refs[q.RefID] = true
		}
		if !refs[r.Condition] {
			t.Errorf("%s: condition %s is no query", title, r.Condition)
		}
		for _, k := range []string{"summary", "description", "runbook_url", "dashboard_panel"} {
			if r.Annotations[k] == "" {
				t.Errorf("%s: annotation %s missing", title, k)
			}
		}
		for k, v := range r.Annotations {
			if strings.Contains(v, "${") {
				t.Errorf("%s: annotation %s contains ${, which newer Grafana versions expand from the environment", title, k)
			}
		}
		if r.Labels["severity"] == "" || r.Labels["service"] != "mcplens" {
			t.Errorf("%s: labels %v lack service and severity for routing", title, r.Labels)
		}
		checkLink(t, title, r.Annotations["dashboard_panel"], panels)
		if !panels[r.DashboardUID][r.PanelID] {
			t.Errorf("%s: dashboardUid/panelId %s/%d is no generated panel", title, r.DashboardUID, r.PanelID)
		}
		if !strings.Contains(string(runbook), "\n## "+title+"\n") {
			t.Errorf("%s: no runbook section \"## %s\" in docs/alerts.md", title, title)
		}
	}
}

// grafanaInterpolate is Grafana's provisioning value expansion
// (pkg/services/provisioning/values/values.go, interpolateValue): split on
// "$$", expand each part from the environment, join with "$".
func grafanaInterpolate(s string, env map[string]string) string {
	parts := strings.Split(s, "$$")
	for i, p := range parts {
		parts[i] = os.Expand(p, func(k string) string { return env[k] })
	}
	return strings.Join(parts, "$")
}

// TestProvisioningEscapesEnvExpansion reads the provisioning file as Grafana
// would: every expanded field must come back exactly as the builders wrote
// it, whatever the environment holds, and the raw fields (query models,
// annotations) must keep their macros and templates.
func TestProvisioningEscapesEnvExpansion(t *testing.T) {
	env := map[string]string{"labels": "EXPANDED", "value": "EXPANDED", "__timeFilter": "EXPANDED", "tool_name": "EXPANDED"}
	groups, err := dashboards.RuleGroups()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]alerting.Rule{}
	for _, g := range groups {
		for _, r := range g.Rules {
			want[r.Title] = r
		}
	}
	for title, r := range provisionedRules(t) {
		w := want[grafanaInterpolate(title, env)]
		if got := grafanaInterpolate(r.UID, env); got != deref(w.Uid) {
			t.Errorf("%s: uid reads back as %q", title, got)
		}
		for k, v := range r.Labels {
			if got := grafanaInterpolate(v, env); got != w.Labels[grafanaInterpolate(k, env)] {
				t.Errorf("%s: label %s reads back as %q", title, k, got)
			}
		}
		for _, f := range []string{r.Condition, r.For, r.NoDataState, r.ExecErrState} {
			if strings.Contains(grafanaInterpolate(f, env), "EXPANDED") {
				t.Errorf("%s: %q expands", title, f)
			}
		}
		if !strings.Contains(r.Data[0].Model.RawSQL, "$__") {
			t.Errorf("%s: the query model lost its macros", title)
		}
		if r.Annotations["summary"] != w.Annotations["summary"] {
			t.Errorf("%s: summary changed in the file", title)
		}
	}
	// The escape itself: a label with a dollar survives expansion.
	if got := grafanaInterpolate(strings.ReplaceAll("cost $5 and $labels", "$", "$$"), env); got != "cost $5 and $labels" {
		t.Errorf("escape: got %q", got)
	}
}

// TestDashboardPromQL parses every Prometheus target with promtool (as
// recording rules, after substituting Grafana's interval variables, which
// PromQL cannot parse; variables inside label values parse as they are) and
// checks that each metric it reads is one mcplens exports.
func TestDashboardPromQL(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (%v); `make deps` installs it", err)
	}
	var exported strings.Builder
	for _, f := range []string{"../gauges/gauges.go", "../pipeline/metrics.go", "../api/api.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		exported.Write(b)
	}
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []rule
	for _, d := range generatedDashboards(t) {
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				if tg.Datasource.Type != "prometheus" {
					continue
				}
				expr := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h").Replace(tg.Expr)
				rules = append(rules, rule{Record: fmt.Sprintf("dashboard:panel_%d_%s", p.ID, strings.ToLower(tg.RefID)), Expr: expr})
				for _, m := range regexp.MustCompile(`\b(?:mcp|mcplens)_[a-z_]+`).FindAllString(tg.Expr, -1) {
					name := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_count"), "_sum")
					if !strings.Contains(exported.String(), `"`+name+`"`) {
						t.Errorf("panel %d: %s is not a metric mcplens exports", p.ID, m)
					}
				}
			}
		}
	}
	if len(rules) == 0 {
		t.Fatal("no Prometheus targets")
	}
	file := map[string]any{"groups": []any{map[string]any{"name": "dashboards", "rules": rules}}}
	b, _ := json.Marshal(file)
	path := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules on the dashboards' PromQL: %v\n%s", err, out)
	}
}

// TestBoundVariables: a bound variable (build.go, boundVariable) is hidden,
// kept out of the URL and links, single-valued and refreshed on every time
// range change, so that Grafana computes it again before each refresh of the
// panels; its query uses the range and no other variable. A panel that uses
// one runs over the dashboard's range: a relative time or time shift of its
// own would give it a bound computed for another range. Every retry-chain
// panel reads the chain fold up to ${chain_bound} and reads no raw call past
// it (chainBoundGuard), and no panel computes such a bound itself.
func TestBoundVariables(t *testing.T) {
	ds, err := dashboards.Build()
	if err != nil {
		t.Fatal(err)
	}
	chainPanels := 0
	for _, d := range ds {
		b, _ := json.Marshal(d)
		var g gDashboard
		_ = json.Unmarshal(b, &g)
		bounds := g.bounds()
		for _, v := range d.Templating.List {
			sql, ok := bounds[v.Name]
			if !ok {
				continue
			}
			name := g.UID + " variable " + v.Name
			if v.SkipUrlSync == nil || !*v.SkipUrlSync || v.Refresh == nil || *v.Refresh != dashboard.VariableRefreshOnTimeRangeChanged ||
				v.Multi != nil && *v.Multi || v.IncludeAll != nil && *v.IncludeAll {
				t.Errorf("%s: want skipUrlSync, refresh on time range change, one value and no All", name)
			}
			if used := usedVariables(sql); len(used) != 0 || !strings.Contains(sql, "$__fromTime") || !strings.Contains(sql, "$__toTime") {
				t.Errorf("%s: its query uses variables %v, or not the range", name, used)
			}
		}
		for _, p := range g.Panels {
			for _, tg := range p.Targets {
				if strings.Contains(tg.RawSQL, "arrayFirstIndex((h, k)") {
					t.Errorf("%s panel %q: computes a fold bound itself; use a bound variable", g.UID, p.Title)
				}
				if readsChainFolds(tg.RawSQL) {
					chainPanels++
					if !strings.Contains(tg.RawSQL, "hour < toDateTime(${chain_bound})") {
						t.Errorf("%s panel %q: reads a chain fold without ${chain_bound}", g.UID, p.Title)
					}
					// TestChainPanelsReadNoCallsPastTheirBound shows what it saves.
					if n := strings.Count(tg.RawSQL, chainBoundGuard); n != 2 {
						t.Errorf("%s panel %q: %d guards %q, want one on the raw calls and one on their groups with a failure", g.UID, p.Title, n, chainBoundGuard)
					}
				}
				for _, u := range usedVariables(tg.RawSQL) {
					if _, ok := bounds[u]; ok && (p.TimeFrom != "" || p.TimeShift != "") {
						t.Errorf("%s panel %q: uses $%s with a time range of its own", g.UID, p.Title, u)
					}
				}
			}
		}
	}
	if chainPanels < 6 {
		t.Errorf("%d retry-chain panels; want the retries dashboard's four, the overview's two and the drilldown's one", chainPanels)
	}
}

// chainFoldRows are the tables compact.RollupChains folds an hour into:
// the retry chains and the failures.
var chainFoldRows = []string{"chains_folded", "recalls_folded"}

// readsChainFolds reports whether sql reads one of chainFoldRows.
func readsChainFolds(sql string) bool {
	return slices.ContainsFunc(chainFoldRows, func(table string) bool { return strings.Contains(sql, "FROM "+table) })
}

// sqlLines returns the lines of a SQL file but its comment lines (those that
// start with "--" after their indentation).
func sqlLines(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestBoundQueriesShareTheirFormula: chain_bound and rollup_bound find the
// first hour without a current fold the same way, over two views; each file
// is sent to Grafana as it is, so the formula is written in both, and this
// keeps the copies one definition.
func TestBoundQueriesShareTheirFormula(t *testing.T) {
	body := func(file, view string) string {
		name := strings.TrimSuffix(filepath.Base(file), ".sql")
		out := strings.ReplaceAll(strings.Join(sqlLines(t, file), "\n"), " AS "+name+"\n", " AS bound\n")
		if n := strings.Count(out, "FROM "+view+"\n"); n != 1 {
			t.Fatalf("%s: %d reads of %s, want 1", file, n, view)
		}
		return strings.ReplaceAll(out, "FROM "+view+"\n", "FROM folds\n")
	}
	chain, rollup := body("variables/chain_bound.sql", "chain_current_folds"), body("variables/rollup_bound.sql", "calls_5m_current_folds")
	if chain != rollup {
		t.Errorf("variables/chain_bound.sql and rollup_bound.sql compute their bound differently:\n%s\n---\n%s", chain, rollup)
	}
}
