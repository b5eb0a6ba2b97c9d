package dashboards_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/dashboards"
)

// BenchmarkPanels runs every ClickHouse panel query of the generated
// dashboards, as Grafana sends it, on synthetic calls spread over 7 days
// (MCPLENS_BENCH_CALLS, default 20,000: a smoke size; BENCHMARKS.md uses
// 10,000,000; MCPLENS_BENCH_FAILED_PCT of them failed, default 15;
// MCPLENS_BENCH_TOOL_NAMES tool names, default 13), on every engine, for a 24 h window (automatic interval 1 m,
// what Grafana picks for 24 h on a dashboard-wide panel) and a 7 d window
// (10 m). Every filter is at All; a single-value tool variable (the
// drilldown) is tool1. The panels that read the retention job's folds run
// again once the complete hours are folded, the last hour read raw
// ("-folded"). The dashboards' bound variables, which Grafana computes once
// before the panels that use them, are timed as "variable_<name>". The data is chtest.Synthetic's, as in
// queries.BenchmarkScale: 1 % of it ingested again, half of that
// reclassified, and the background merges that follow waited for.
// Sub-benchmarks are named engine/calls/window/panel file; a file used on
// several dashboards runs once. With -benchtime 1x -count 3 the median of
// the three runs is the number BENCHMARKS.md reports:
//
//	MCPLENS_BENCH_CALLS=10000000 go test -run '^$' -bench BenchmarkPanels -benchtime 1x -count 3 -timeout 3h ./dashboards
func BenchmarkPanels(b *testing.B) {
	n := chtest.BenchCalls(b, 20_000)
	failed := chtest.BenchFailedPercent(b, chtest.MaxFailedPercent)
	names := chtest.BenchToolNames(b)
	end := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	span := 7 * 24 * time.Hour
	// folded: timed in the folded pass only. Yesterday ends on an hour's
	// last second, as Grafana's Yesterday does: with every hour folded the
	// chain panels read no raw call (docs/dashboards.md, "Bound variables").
	windows := []struct {
		name   string
		r      macroRange
		folded bool
	}{
		{"24h", macroRange{from: end.Add(-24 * time.Hour), to: end, interval: time.Minute}, false},
		{"7d", macroRange{from: end.Add(-span), to: end, interval: 10 * time.Minute}, false},
		{"yesterday", macroRange{from: end.Add(-48 * time.Hour), to: end.Add(-24*time.Hour - time.Second), interval: time.Minute}, true},
	}
	targets := panelTargets(b, "tool1")
	// The drilldown's Calls panel narrowed, as its links open it: to the
	// EMPTY_RESULT calls with one department, and to one argument value
	// under any key (synthetic/calls.sql: departments d0-d8, q0-q49).
	for _, tg := range targets {
		if tg.file != "tool_calls" {
			continue
		}
		for _, n := range []struct {
			name string
			set  map[string]selection
		}{
			{"tool_calls-empty-department", map[string]selection{"category": values("EMPTY_RESULT"), "arg_key": values("department"), "arg_value": values("d3")}},
			{"tool_calls-value", map[string]selection{"arg_value": values("q7")}},
		} {
			narrowed := tg
			narrowed.file, narrowed.vars = n.name, maps.Clone(tg.vars)
			maps.Copy(narrowed.vars, n.set)
			targets = append(targets, narrowed)
		}
		break
	}
	// The bound variables (build.go, boundVariable), which Grafana runs once
	// before the panels that use them, are timed as targets of their own.
	var bounds []string
	boundSQL := map[string]string{}
	for _, d := range generatedDashboards(b) {
		for name, q := range d.bounds() {
			if _, ok := boundSQL[name]; !ok {
				bounds = append(bounds, name)
				boundSQL[name] = q
			}
		}
	}
	slices.Sort(bounds)
	for _, name := range bounds {
		targets = append(targets, panelTarget{file: "variable_" + name, sql: boundSQL[name]})
	}
	ctx := context.Background()
	for _, e := range chtest.Engines(b) {
		err := chtest.Synthetic(ctx, e, chtest.SyntheticData{Calls: n, FailedPct: failed, ToolNames: names, End: end, Span: span})
		if err != nil {
			b.Fatal(err)
		}
		run := func(suffix string, only func(tg panelTarget) bool) {
			for _, w := range windows {
				if w.folded && suffix == "" {
					continue
				}
				for _, tg := range targets {
					if !only(tg) {
						continue
					}
					r := w.r
					r.interval = max(r.interval, tg.minInterval)
					// The bound variables are computed before the loop, as
					// Grafana computes them before the panels.
					sql := tg.expand(b, e, tg.sql, r)
					rowType := resultType(b, e, sql)
					b.Run(strings.SplitN(e.Name, "-", 2)[0]+"/"+chtest.BenchDataName(n, names)+"/"+w.name+"/"+tg.file+suffix, func(b *testing.B) {
						for b.Loop() {
							// The whole result, scanned as the plugin would read it.
							dest := reflect.New(reflect.SliceOf(rowType))
							if err := e.DB.Select(ctx, dest.Interface(), sql); err != nil {
								b.Fatalf("%v\n%s", err, sql)
							}
						}
					})
				}
			}
		}
		run("", func(panelTarget) bool { return true })
		// The panels that read the folds, again once the retention job has
		// folded the complete hours (compact.RollupHours) and their retry
		// chains (compact.RollupChains), as it has within the hour in
		// production, but for the last hour, which a late insert (a copy of
		// one of its calls) sends back to the raw calls as the current hour
		// is, and with it the chains of the hour before ("-folded").
		foldButLastHour(b, e, end)
		run("-folded", func(tg panelTarget) bool {
			return strings.Contains(tg.sql, "calls_5m_current_folds") || strings.Contains(tg.sql, "chain_current_folds")
		})
	}
}

// foldButLastHour folds the complete hours of e's calls and their retry
// chains, as the retention job has within the hour in production, then sends
// the hour before end back to the raw calls with a late insert (a copy of
// one of its calls), as the current hour is.
func foldButLastHour(b *testing.B, e *chtest.Engine, end time.Time) {
	b.Helper()
	ctx := context.Background()
	res, err := compact.RollupHours(ctx, e.DB, time.Now(), time.Since(end)+30*24*time.Hour, 0)
	if err != nil {
		b.Fatal(err)
	}
	chains, err := compact.RollupChains(ctx, e.DB, time.Now(), time.Since(end)+30*24*time.Hour, 0)
	if err != nil {
		b.Fatal(err)
	}
	err = e.DB.Exec(ctx, "INSERT INTO calls SELECT * FROM calls WHERE ts >= @last LIMIT 1", clickhouse.Named("last", end.Add(-time.Hour)))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: folded %d hours in %s and their chains in %s, then sent the last back to the raw calls", e.Name, len(res.Folded), res.Took.Round(time.Millisecond), chains.Took.Round(time.Millisecond))
}

// resultType is the row struct query() scans a result of sql into.
func resultType(b testing.TB, e *chtest.Engine, sql string) reflect.Type {
	cols := describe(b, e, sql)
	fields := make([]reflect.StructField, len(cols))
	for i, c := range cols {
		fields[i] = reflect.StructField{
			Name: fmt.Sprintf("F%d", i),
			Type: goType(b, c.Type, e.Conn != nil),
			Tag:  reflect.StructTag(fmt.Sprintf(`ch:"%s"`, c.Name)),
		}
	}
	return reflect.StructOf(fields)
}

// panelTarget is one panel query: its file, text, variables and the
// panel's minimum interval.
type panelTarget struct {
	file        string
	sql         string
	vars        map[string]selection
	bounds      map[string]string
	minInterval time.Duration
}

// expand is what Grafana sends for sql (the target's own or another form of
// it) over r on e: its dashboard's bound variables computed first
// (resolveBounds), then expandPanel.
func (tg panelTarget) expand(t testing.TB, e *chtest.Engine, sql string, r macroRange) string {
	t.Helper()
	return expandPanel(t, sql, resolveBounds(t, e, sql, tg.bounds, tg.vars, r), nil, r)
}

// panelTargetOf returns panelTargets' target of panels/<file>.sql.
func panelTargetOf(b testing.TB, tool, file string) panelTarget {
	b.Helper()
	for _, tg := range panelTargets(b, tool) {
		if tg.file == file {
			return tg
		}
	}
	b.Fatalf("no panel reads panels/%s.sql", file)
	return panelTarget{}
}

// panelTargets returns one target per panel SQL file, in dashboard order,
// with every filter at All (a single-value tool variable at tool).
func panelTargets(b testing.TB, tool string) []panelTarget {
	b.Helper()
	files, err := filepath.Glob("panels/*.sql")
	if err != nil {
		b.Fatal(err)
	}
	byText := map[string]string{}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		byText[string(text)] = strings.TrimSuffix(filepath.Base(f), ".sql")
	}
	seen := map[string]bool{}
	var out []panelTarget
	for _, d := range generatedDashboards(b) {
		vars := selections(d)["all"]
		for _, v := range d.Templating.List {
			if v.Type == "query" && !v.Multi {
				vars[v.Name] = values(tool)
			}
		}
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				if tg.Datasource.Type != dashboards.ClickHousePluginID {
					continue
				}
				file, ok := byText[tg.RawSQL]
				if !ok {
					b.Fatalf("panel %q: SQL not found in panels/*.sql", p.Title)
				}
				if seen[file] {
					continue
				}
				seen[file] = true
				var min time.Duration
				if p.Interval != "" {
					if min, err = time.ParseDuration(p.Interval); err != nil {
						b.Fatalf("panel %q: interval %q: %v", p.Title, p.Interval, err)
					}
				}
				out = append(out, panelTarget{file: file, sql: tg.RawSQL, vars: vars, bounds: d.bounds(), minInterval: min})
			}
		}
	}
	return out
}

// BenchmarkAlerts runs every Grafana alert rule's ClickHouse query as
// Grafana's alerting engine sends it (its relative range ending at the
// data's end, the backend macros expanded with the default interval of
// 1 s) on BenchmarkPanels' synthetic calls, on every engine; then again
// once the complete hours and their chains are folded and the last hour
// sent back to the raw calls ("-folded"), as in production within the
// hour. Sub-benchmarks are named engine/calls/rule:
//
//	MCPLENS_BENCH_CALLS=10000000 go test -run '^$' -bench BenchmarkAlerts -benchtime 1x -count 3 -timeout 3h ./dashboards
func BenchmarkAlerts(b *testing.B) {
	n := chtest.BenchCalls(b, 20_000)
	failed := chtest.BenchFailedPercent(b, chtest.MaxFailedPercent)
	names := chtest.BenchToolNames(b)
	end := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	rules := provisionedRules(b)
	titles := slices.Sorted(maps.Keys(rules))
	ctx := context.Background()
	for _, e := range chtest.Engines(b) {
		err := chtest.Synthetic(ctx, e, chtest.SyntheticData{Calls: n, FailedPct: failed, ToolNames: names, End: end, Span: 7 * 24 * time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		run := func(suffix string) {
			for _, title := range titles {
				for _, q := range rules[title].Data {
					if q.DatasourceUID != dashboards.ClickHouseDatasourceUID {
						continue
					}
					r := macroRange{
						from:     end.Add(-time.Duration(q.RelativeTimeRange.From) * time.Second),
						to:       end.Add(-time.Duration(q.RelativeTimeRange.To) * time.Second),
						interval: time.Second,
					}
					sql := expandMacros(b, q.Model.RawSQL, r)
					rowType := resultType(b, e, sql)
					b.Run(strings.SplitN(e.Name, "-", 2)[0]+"/"+chtest.BenchDataName(n, names)+"/"+title+suffix, func(b *testing.B) {
						for b.Loop() {
							dest := reflect.New(reflect.SliceOf(rowType))
							if err := e.DB.Select(ctx, dest.Interface(), sql); err != nil {
								b.Fatalf("%v\n%s", err, sql)
							}
						}
					})
				}
			}
		}
		run("")
		foldButLastHour(b, e, end)
		run("-folded")
	}
}
