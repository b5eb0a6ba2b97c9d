package dashboards_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/dashboards"
	"github.com/mcplens/mcplens/pipeline/classify"
)

// pRule is an alert rule as the generated provisioning file holds it, read
// back the way Grafana's provisioning reads it.
type pRule struct {
	UID          string            `json:"uid"`
	Title        string            `json:"title"`
	Condition    string            `json:"condition"`
	DashboardUID string            `json:"dashboardUid"`
	PanelID      uint32            `json:"panelId"`
	NoDataState  string            `json:"noDataState"`
	ExecErrState string            `json:"execErrState"`
	For          string            `json:"for"`
	Annotations  map[string]string `json:"annotations"`
	Labels       map[string]string `json:"labels"`
	Data         []struct {
		RefID             string `json:"refId"`
		DatasourceUID     string `json:"datasourceUid"`
		RelativeTimeRange struct {
			From int64 `json:"from"`
			To   int64 `json:"to"`
		} `json:"relativeTimeRange"`
		Model struct {
			RefID      string  `json:"refId"`
			Type       string  `json:"type"`
			RawSQL     string  `json:"rawSql"`
			Format     *int    `json:"format"`
			IntervalMs float64 `json:"intervalMs"`
			Expression string  `json:"expression"`
			Reducer    string  `json:"reducer"`
			Conditions []struct {
				Evaluator struct {
					Type   string    `json:"type"`
					Params []float64 `json:"params"`
				} `json:"evaluator"`
			} `json:"conditions"`
		} `json:"model"`
	} `json:"data"`
}

type pFile struct {
	APIVersion int `json:"apiVersion"`
	Groups     []struct {
		OrgID    int64   `json:"orgId"`
		Name     string  `json:"name"`
		Folder   string  `json:"folder"`
		Interval string  `json:"interval"`
		Rules    []pRule `json:"rules"`
	} `json:"groups"`
}

// provisionedFile is the generated alert provisioning file, read back.
func provisionedFile(t testing.TB) pFile {
	t.Helper()
	files, err := dashboards.Files()
	if err != nil {
		t.Fatal(err)
	}
	var f pFile
	if err := json.Unmarshal(files[dashboards.GeneratedAlertsFile], &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func provisionedRules(t testing.TB) map[string]pRule {
	t.Helper()
	rules := map[string]pRule{}
	for _, g := range provisionedFile(t).Groups {
		for _, r := range g.Rules {
			rules[r.Title] = r
		}
	}
	return rules
}

// TestAlertGroupIntervals checks the rule groups' evaluation intervals in
// the provisioning file: each a multiple of Grafana's 10 s base interval,
// each rule's pending period a multiple of its group's interval (so that it
// means the evaluations it says), and no rule that reads more than the last
// hour evaluated more often than every 5 minutes: those read days of
// history, 0.45-2 s of ClickHouse each at 10M calls a week (BENCHMARKS.md).
func TestAlertGroupIntervals(t *testing.T) {
	for _, g := range provisionedFile(t).Groups {
		every, err := time.ParseDuration(g.Interval)
		if err != nil || every <= 0 || every%(10*time.Second) != 0 {
			t.Errorf("group %s: interval %q is no positive multiple of 10 s (%v)", g.Name, g.Interval, err)
			continue
		}
		for _, r := range g.Rules {
			pending, err := time.ParseDuration(r.For)
			if err != nil || pending%every != 0 {
				t.Errorf("%s: for %q is no multiple of its group's %s (%v)", r.Title, r.For, every, err)
			}
			for _, q := range r.Data {
				if reads := time.Duration(q.RelativeTimeRange.From) * time.Second; q.DatasourceUID == dashboards.ClickHouseDatasourceUID && reads > time.Hour && every < 5*time.Minute {
					t.Errorf("%s reads %s of calls every %s, want every 5 minutes or less often", r.Title, reads, every)
				}
			}
		}
	}
}

// instance is one alert instance: its labels, the reduced value (B) and
// whether the condition (C) holds.
type instance struct {
	labels map[string]string
	value  float64
	firing bool
}

// evaluate runs a rule as Grafana's alerting engine does at time at: the
// data query over its relative range with the backend macros expanded and
// the default interval of 1 s (no template variables), then each
// expression in order. A table result with string columns and one numeric
// column is a set of numbers labelled by the strings; Reduce leaves a
// number as it is; Threshold compares it. No rows is NoData, which the
// rules map to OK.
func evaluate(t *testing.T, e *chtest.Engine, r pRule, at time.Time) []instance {
	t.Helper()
	results := map[string][]instance{}
	for _, q := range r.Data {
		m := q.Model
		switch {
		case q.DatasourceUID == dashboards.ClickHouseDatasourceUID:
			if m.Format == nil || *m.Format != dashboards.FormatTable {
				t.Fatalf("%s %s: alert queries here are tables", r.Title, q.RefID)
			}
			interval := time.Second
			if m.IntervalMs > 0 {
				interval = time.Duration(m.IntervalMs) * time.Millisecond
			}
			mr := macroRange{
				from:     at.Add(-time.Duration(q.RelativeTimeRange.From) * time.Second),
				to:       at.Add(-time.Duration(q.RelativeTimeRange.To) * time.Second),
				interval: interval,
			}
			cols, rows := query(t, e, expandMacros(t, m.RawSQL, mr))
			var out []instance
			for _, row := range rows {
				in := instance{labels: map[string]string{}, value: math.NaN()}
				numeric := 0
				for i, c := range cols {
					switch {
					case isString(c.Type):
						in.labels[c.Name] = row[i].(string)
					case isNumeric(c.Type):
						numeric++
						in.value = toFloat(row[i])
					default:
						t.Fatalf("%s: column %v is neither a label nor the value", r.Title, c)
					}
				}
				if numeric != 1 {
					t.Fatalf("%s: %d numeric columns; Grafana alerts on exactly one", r.Title, numeric)
				}
				out = append(out, in)
			}
			results[q.RefID] = out
		case m.Type == "reduce":
			in, ok := results[m.Expression]
			if !ok {
				t.Fatalf("%s: reduce %s reads %s, not evaluated before it", r.Title, q.RefID, m.Expression)
			}
			if !map[string]bool{"last": true, "mean": true, "min": true, "max": true, "sum": true, "median": true}[m.Reducer] {
				t.Fatalf("%s: reducer %q not modelled", r.Title, m.Reducer)
			}
			results[q.RefID] = in // a number reduces to itself
		case m.Type == "threshold":
			in, ok := results[m.Expression]
			if !ok {
				t.Fatalf("%s: threshold %s reads %s, not evaluated before it", r.Title, q.RefID, m.Expression)
			}
			if len(m.Conditions) != 1 {
				t.Fatalf("%s: %d threshold conditions", r.Title, len(m.Conditions))
			}
			ev := m.Conditions[0].Evaluator
			out := make([]instance, len(in))
			for i, x := range in {
				out[i] = instance{labels: x.labels, value: x.value, firing: compare(t, ev.Type, ev.Params, x.value)}
			}
			results[q.RefID] = out
		default:
			t.Fatalf("%s: query %s of type %q not modelled", r.Title, q.RefID, m.Type)
		}
	}
	return results[r.Condition]
}

func compare(t *testing.T, typ string, p []float64, v float64) bool {
	t.Helper()
	switch typ {
	case "gt":
		return v > p[0]
	case "lt":
		return v < p[0]
	case "gte":
		return v >= p[0]
	case "lte":
		return v <= p[0]
	case "eq":
		return v == p[0]
	case "ne":
		return v != p[0]
	case "within_range":
		return v > p[0] && v < p[1]
	case "outside_range":
		return v < p[0] || v > p[1]
	}
	t.Fatalf("threshold type %q not modelled", typ)
	return false
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case uint64:
		return float64(x)
	case uint32:
		return float64(x)
	case uint16:
		return float64(x)
	case uint8:
		return float64(x)
	case int64:
		return float64(x)
	case int32:
		return float64(x)
	case int16:
		return float64(x)
	case int8:
		return float64(x)
	}
	return math.NaN()
}

// testAlerts evaluates each generated rule, read from the provisioning
// file, on the fixture and checks, for the tools of each rule's scenario,
// which fire and with what value: some are made to fire, the others each
// sit just past one of the rule's boundaries. Rules are per tenant, server
// and tool, so the other scenarios' tools in the same data do not matter.
// The rule's `for` is not simulated: a condition that holds here fires once
// it has held that long.
func testAlerts(t *testing.T, e *chtest.Engine, rules map[string]pRule) {
	covered := map[string]bool{}
	for _, sc := range scenarios() {
		r, ok := rules[sc.rule]
		if !ok {
			t.Fatalf("scenario for unknown rule %s", sc.rule)
		}
		covered[sc.rule] = true
		mine := map[string]bool{}
		for _, c := range sc.calls {
			mine[c.tool] = true
		}
		got := map[string]float64{}
		for _, in := range evaluate(t, e, r, now) {
			if !in.firing || !mine[in.labels["tool_name"]] {
				continue
			}
			if in.labels["tenant_name"] != "acme" || in.labels["server_name"] != "kb" {
				t.Errorf("%s: labels %v", sc.rule, in.labels)
			}
			got[in.labels["tool_name"]] = in.value
			checkTemplates(t, r, in)
		}
		if !sameValues(got, sc.fire) {
			t.Errorf("%s: firing %v, want %v", sc.rule, got, sc.fire)
		}
		// Before the data, the same query has nothing to say: NoData, OK.
		for _, in := range evaluate(t, e, r, now.Add(-30*24*time.Hour)) {
			if in.firing {
				t.Errorf("%s: fires on an empty range: %v", sc.rule, in.labels)
			}
		}
		if r.NoDataState != "OK" {
			t.Errorf("%s: noDataState %s; no rows means nothing to report", sc.rule, r.NoDataState)
		}
	}
	for title := range rules {
		if !covered[title] {
			t.Errorf("rule %s has no scenario", title)
		}
	}
}

func sameValues(got, want map[string]float64) bool {
	if len(got) != len(want) {
		return false
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || math.Abs(g-w) > 1e-9 {
			return false
		}
	}
	return true
}

// checkTemplates renders the rule's annotations as Grafana does: Go
// templates with $labels, $values and $value defined, plus the
// humanize functions the rules use.
func checkTemplates(t *testing.T, r pRule, in instance) {
	t.Helper()
	type valueData struct {
		Labels map[string]string
		Value  float64
	}
	data := struct {
		Labels map[string]string
		Values map[string]valueData
		Value  string
	}{
		Labels: in.labels,
		Values: map[string]valueData{"A": {in.labels, in.value}, "B": {in.labels, in.value}, "C": {in.labels, 1}},
		Value:  fmt.Sprintf("[ var='B' labels={%v} value=%v ]", in.labels, in.value),
	}
	funcs := template.FuncMap{
		"humanizePercentage": func(v float64) string { return fmt.Sprintf("%.4g%%", v*100) },
		"humanize":           func(v float64) string { return fmt.Sprintf("%.4g", v) },
	}
	for _, k := range sortedKeys(r.Annotations) {
		text := "{{- $labels := .Labels -}}{{- $values := .Values -}}{{- $value := .Value -}}" + r.Annotations[k]
		tmpl, err := template.New(k).Option("missingkey=error").Funcs(funcs).Parse(text)
		if err != nil {
			t.Errorf("%s annotation %s: %v", r.Title, k, err)
			continue
		}
		var b strings.Builder
		if err := tmpl.Execute(&b, data); err != nil {
			t.Errorf("%s annotation %s: %v", r.Title, k, err)
		}
		if strings.Contains(b.String(), "<no value>") {
			t.Errorf("%s annotation %s renders %q", r.Title, k, b.String())
		}
	}
}

// TestSpikeAlertsReadOnlyCurrentFolds evaluates the two baseline rules
// with their tools' baseline hours folded into plain counts
// (compact.RollupHours), after 100 late successes land in folded hours of
// each tool's baseline, which halves its share there and doubles the
// ratio, and after those hours are folded again: a fold whose hour took an
// insert since is not read.
func TestSpikeAlertsReadOnlyCurrentFolds(t *testing.T) {
	rules := provisionedRules(t)
	late := func(tool string) []fx {
		return repeat(100, fx{tool: tool, category: classify.OK}, func(i int, f *fx) {
			f.at, f.session = 30*hr+time.Duration(i)*minute, fmt.Sprintf("%s-late%d", tool, i)
		})
	}
	fire := func(t *testing.T, e *chtest.Engine, stage string, want map[string]float64) {
		t.Helper()
		for rule, tool := range map[string]string{"MCPInvalidArgumentSpike": "spiky", "MCPEmptyResultSpike": "empty_spike"} {
			got := map[string]float64{}
			for _, in := range evaluate(t, e, rules[rule], now) {
				if in.firing {
					got[in.labels["tool_name"]] = in.value
				}
			}
			if !sameValues(got, map[string]float64{tool: want[tool]}) {
				t.Errorf("%s: %s fires %v, want %s at %v", stage, rule, got, tool, want[tool])
			}
		}
	}
	fold := func(t *testing.T, e *chtest.Engine, hours int) {
		t.Helper()
		if res, err := compact.RollupHours(context.Background(), e.DB, time.Now(), time.Since(now)+30*24*time.Hour, 0); err != nil || len(res.Folded) != hours {
			t.Fatalf("fold: %v %v, want %d hours folded", res, err, hours)
		}
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, calls(spikeTool("spiky", classify.InvalidArgument, 100, 2, 20, 3), // 15 % vs 2 %
				spikeTool("empty_spike", classify.EmptyResult, 100, 10, 20, 6), // 30 % vs 10 % of the calls that did not fail
				repeat(20, fx{tool: "empty_spike", category: classify.Internal}, func(i int, f *fx) {
					f.at, f.session = 50*hr+time.Duration(i)*minute, fmt.Sprintf("empty_spike-f%d", i)
				})))
			fold(t, e, 101) // the baselines' 100 hours and the last one
			fire(t, e, "folded", map[string]float64{"spiky": 7.5, "empty_spike": 3})
			e.Insert(t, calls(late("spiky"), late("empty_spike")))
			want := map[string]float64{"spiky": 15, "empty_spike": 6} // 15 % vs 1 %, 30 % vs 5 %
			fire(t, e, "100 late successes in folded hours", want)
			fold(t, e, 3) // 100 minutes from 30 hours before now: 04:20-06:00
			fire(t, e, "folded again", want)
		})
	}
}

// chainRules are the alert rules that cut retry chains: they add the
// chains of the hours with a current chain fold up from the fold and
// compute the rest from the raw calls, as the chain panels do.
var chainRules = []string{"MCPRetryableNeverRecovers", "MCPNonRetryableRecovers", "MCPRetriedNonRetryable"}

// TestChainAlertsReadTheChainFold evaluates the chain rules on their
// scenarios with nothing folded, then with every hour of the range folded
// (compact.RollupChains), with one hour's fold made stale by a late copy of
// a call (the rules read the raw calls from there), and folded again with
// the raw calls' partitions dropped: each time the same instances, and the
// last proves that the folded hours come from the fold. Two calls of
// another tool, in the range's first and last minutes, make every hour
// between them a folded one (quiet hours are folded between inserts).
func TestChainAlertsReadTheChainFold(t *testing.T) {
	ctx := context.Background()
	rules := provisionedRules(t)
	var fixture []fx
	for _, sc := range scenarios() {
		for _, r := range chainRules {
			if sc.rule == r {
				fixture = append(fixture, sc.calls...)
			}
		}
	}
	fixture = append(fixture,
		fx{at: 24*hr - 10*minute, tool: "filler", session: "filler-first", category: classify.OK},
		fx{at: 30 * time.Second, tool: "filler", session: "filler-last", category: classify.OK})
	evaluateAll := func(t *testing.T, e *chtest.Engine) map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, name := range chainRules {
			r, ok := rules[name]
			if !ok {
				t.Fatalf("no rule %s", name)
			}
			var firing []string
			for _, in := range evaluate(t, e, r, now) {
				if in.firing {
					firing = append(firing, fmt.Sprintf("%s=%g", in.labels["tool_name"], in.value))
				}
			}
			slices.Sort(firing)
			out[name] = strings.Join(firing, " ")
		}
		return out
	}
	check := func(t *testing.T, stage string, got, want map[string]string) {
		t.Helper()
		for _, name := range chainRules {
			if got[name] != want[name] {
				t.Errorf("%s: %s fires %q, want %q", stage, name, got[name], want[name])
			}
		}
	}
	current := func(t *testing.T, e *chtest.Engine) int {
		t.Helper()
		var n []struct {
			N uint64 `ch:"n"`
		}
		if err := e.DB.Select(ctx, &n, "SELECT count() AS n FROM chain_current_folds WHERE hour >= @from AND hour < @to",
			clickhouse.Named("from", now.Add(-24*time.Hour)), clickhouse.Named("to", now)); err != nil {
			t.Fatal(err)
		}
		return int(n[0].N)
	}
	fold := func(t *testing.T, e *chtest.Engine) int {
		t.Helper()
		if _, err := compact.RollupChains(ctx, e.DB, time.Now(), time.Since(now)+48*time.Hour, 0); err != nil {
			t.Fatal(err)
		}
		return current(t, e)
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, calls(fixture))
			want := evaluateAll(t, e)
			for _, name := range chainRules {
				if want[name] == "" {
					t.Fatalf("%s fires for no tool on its scenarios; the comparison would prove nothing", name)
				}
			}
			if n := fold(t, e); n != 24 {
				t.Fatalf("%d of the range's 24 hours have a current chain fold", n)
			}
			check(t, "every hour folded", evaluateAll(t, e), want)
			// A late copy of a chain's call makes its hour's fold and its
			// neighbours' stale: the rules read the raw calls from the hour
			// before it on, and the copy counts once.
			err := e.DB.Exec(ctx, "INSERT INTO calls SELECT * FROM calls WHERE tool = 'create_same' LIMIT 1")
			if err != nil {
				t.Fatal(err)
			}
			if n := current(t, e); n == 24 {
				t.Fatal("every fold still current after a late insert")
			}
			check(t, "a stale fold", evaluateAll(t, e), want)
			if n := fold(t, e); n != 24 {
				t.Fatalf("%d of the range's 24 hours have a current chain fold after folding again", n)
			}
			for _, day := range []string{"20261128", "20261129"} {
				if err := e.DB.Exec(ctx, "ALTER TABLE calls DROP PARTITION "+day); err != nil {
					t.Fatal(err)
				}
			}
			check(t, "folded, the raw calls dropped", evaluateAll(t, e), want)
		})
	}
}

// TestChainAlertsBoundIsTheVariables: the chain rules' bound, a scalar
// subquery in each of its four places, is the dashboards' chain_bound
// variable (variables/chain_bound.sql) but for its rendering as a string.
func TestChainAlertsBoundIsTheVariables(t *testing.T) {
	flat := func(file string) string {
		return strings.NewReplacer("( ", "(", " )", ")").Replace(strings.Join(strings.Fields(strings.Join(sqlLines(t, file), " ")), " "))
	}
	v := flat("variables/chain_bound.sql")
	bound := strings.Replace(strings.Replace(v, "SELECT toString(least(", "(SELECT least(", 1), ")) AS chain_bound FROM", ") FROM", 1) + ")"
	if bound == "("+v+")" || !strings.HasPrefix(bound, "(SELECT least(") {
		t.Fatalf("variables/chain_bound.sql no longer reads SELECT toString(least(...)) AS chain_bound FROM ...:\n%s", v)
	}
	for _, f := range []string{"alerts/non_retryable_recovers.sql", "alerts/retried_non_retryable.sql", "alerts/retryable_never_recovers.sql"} {
		if n := strings.Count(flat(f), bound); n != 4 {
			t.Errorf("%s: the chain_bound variable's formula %d times as a scalar subquery, want 4:\n%s", f, n, bound)
		}
	}
}
