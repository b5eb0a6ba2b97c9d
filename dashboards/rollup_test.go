package dashboards_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/traffic"
)

// exactUnderReclassification lists the panels whose answer is the latest
// ingest's even when a call is re-ingested with another classification:
// those that read the raw calls, and the call total of the rollup (distinct
// call ids over every class). The other rollup panels count such a call
// under each class it was ingested with (docs/dashboards.md).
var exactUnderReclassification = map[string]bool{
	"overview_calls":            true,
	"failure_messages":          true,
	"unknown_tools":             true,
	"invalid_argument_top_args": true,
	"empty_by_argument":         true,
	"retry_outcomes":            true,
	"retry_outcomes_over_time":  true,
	"retry_recoveries":          true,
	"recalls":                   true,
	"client_habits":             true,
}

// TestPanelsMatchTheirFinalForms checks that the panels which no longer
// read calls FINAL (the rate and count panels read the 5-minute rollups; the
// others drop replaced copies themselves) answer as their FINAL forms do.
// testdata/final/<panel>.sql is each such panel's SQL as it was with FINAL:
// every call once, as its latest ingest, the definition. Generated traffic
// is ingested once, then a quarter of it again unchanged (a client
// resending), then that quarter's ingest inserted a second time: every
// panel must equal its FINAL form. Then a fifth is
// ingested a third time with another classification (a rules change): the
// panels of exactUnderReclassification must still equal it. Each state is
// compared again once the complete hours are folded (compact.RollupHours),
// whose records of the calls stored more than once some panels read, and
// with folds that list no copies, as those made before that record existed. The range is
// on the 5-minute grid and holds all the traffic, so the rollups' whole
// buckets and the raw time filter select the same calls (INVALID_ARGUMENT
// spikes start later, so that their baseline before the range has calls).
func TestPanelsMatchTheirFinalForms(t *testing.T) {
	calls, busiest := stormyCalls(t)
	day := traffic.DefaultStart.Truncate(24 * time.Hour)
	replay, reclassified := reingested(calls, nil)
	var targets []panelTarget
	for _, tg := range panelTargets(t, busiest) {
		if _, err := os.Stat(filepath.Join("testdata", "final", tg.file+".sql")); err == nil {
			targets = append(targets, tg)
		}
	}
	if len(targets) < 20 {
		t.Fatalf("only %d panels have a FINAL form in testdata/final", len(targets))
	}
	r := macroRange{from: traffic.DefaultStart.Add(-time.Hour), to: traffic.DefaultStart.Add(23 * time.Hour), interval: 5 * time.Minute}
	cut := macroRange{from: traffic.DefaultStart.Add(30 * time.Minute), to: traffic.DefaultStart.Add(10*time.Hour + 15*time.Minute), interval: 5 * time.Minute}
	expand := func(t *testing.T, e *chtest.Engine, tg panelTarget, sql string) string {
		pr := r
		pr.interval = max(pr.interval, tg.minInterval)
		if tg.file == "invalid_argument_spikes" {
			// A range that starts after the first hours of traffic, so
			// that the baseline before it comes from the rollup.
			pr.from = traffic.DefaultStart.Add(2 * time.Hour)
		}
		return tg.expand(t, e, sql, pr)
	}
	// expansion is a range a panel is compared over: its name in errors
	// and the SQL with the range's macros expanded.
	type expansion struct {
		what string
		sql  func(string) string
	}
	compare := func(t *testing.T, e *chtest.Engine, onlyExact bool) {
		for _, tg := range targets {
			if onlyExact && !exactUnderReclassification[tg.file] {
				continue
			}
			final, err := os.ReadFile(filepath.Join("testdata", "final", tg.file+".sql"))
			if err != nil {
				t.Fatal(err)
			}
			// A panel that takes the hours lying whole in the range from
			// an hourly fold is compared over a range that cuts hours at
			// both ends too, which it reads raw.
			ranges := []expansion{{"", func(q string) string { return expand(t, e, tg, q) }}}
			if strings.Contains(tg.sql, "invalid_args_folded") || readsChainFolds(tg.sql) {
				ranges = append(ranges, expansion{" over a range that cuts hours", func(q string) string { return tg.expand(t, e, q, cut) }})
			}
			for _, rg := range ranges {
				_, got := query(t, e, rg.sql(tg.sql))
				_, want := query(t, e, rg.sql(string(final)))
				if len(want) == 0 {
					t.Errorf("%s%s: no rows; the comparison would prove nothing", tg.file, rg.what)
				}
				if g, w := canonical(got), canonical(want); g != w {
					t.Errorf("%s%s differs from its FINAL form:\n got %s\nwant %s", tg.file, rg.what, g, w)
				}
			}
		}
	}
	// fold folds every complete hour, as the retention job does: the
	// panels that set re-ingested copies aside then find them in the folds
	// (calls_copies_folded, calls_latest_folded) instead of grouping the raw
	// call ids.
	fold := func(t *testing.T, e *chtest.Engine, first bool) {
		ctx := context.Background()
		if _, err := compact.RollupHours(ctx, e.DB, time.Now(), time.Since(r.from)+48*time.Hour, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := compact.RollupChains(ctx, e.DB, time.Now(), time.Since(r.from)+48*time.Hour, 0); err != nil {
			t.Fatal(err)
		}
		var n []struct {
			N uint64 `ch:"n"`
		}
		for _, table := range chainFoldRows {
			if err := e.DB.Select(ctx, &n, "SELECT count() AS n FROM "+table+" WHERE (hour, fold) IN (SELECT hour, fold FROM chain_current_folds)"); err != nil {
				t.Fatal(err)
			}
			if n[0].N == 0 {
				t.Fatalf("the current chain folds hold no row in %s; the folded comparison would prove nothing", table)
			}
		}
		if err := e.DB.Select(ctx, &n, "SELECT count() AS n FROM chain_folds WHERE open = 1 AND toInt64(toUInt32(hour)) = @hour_s", clickhouse.Named("hour_s", day.Add(12*time.Hour).Unix())); err != nil {
			t.Fatal(err)
		}
		// Only the first time: the reclassified calls break the storm.
		if first && n[0].N == 0 {
			t.Fatal("the fold of 12:00 is not open; the storm that retries past its end would not test the open folds")
		}
		for _, table := range []string{"calls_copies_folded", "calls_latest_folded"} {
			if err := e.DB.Select(ctx, &n, "SELECT count() AS n FROM "+table+" WHERE call_id != 0 AND (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)"); err != nil {
				t.Fatal(err)
			}
			if n[0].N == 0 {
				t.Fatalf("the current folds record no copied call in %s; the folded comparison would prove nothing", table)
			}
		}
	}
	// foldReaders answers every panel that reads the folds, canonically,
	// by file.
	foldReaders := func(t *testing.T, e *chtest.Engine) map[string]string {
		out := map[string]string{}
		for _, tg := range targets {
			if strings.Contains(tg.sql, "calls_5m_current_folds") {
				_, rows := query(t, e, expand(t, e, tg, tg.sql))
				out[tg.file] = canonical(rows)
			}
		}
		if len(out) < 8 {
			t.Fatalf("only %d panels with a FINAL form read the folds", len(out))
		}
		return out
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			// The copies stay unmerged until OPTIMIZE, so that the folds
			// record them.
			e.StopMerges(t)
			e.Insert(t, calls)
			e.Insert(t, replay)
			compare(t, e, false)
			// The resent quarter inserted twice (a spool replayed after a
			// crash): the same copies once more.
			e.Insert(t, replay)
			compare(t, e, false)
			fold(t, e, true)
			compare(t, e, false)
			e.Insert(t, reclassified) // the folds of the hours it touches are no longer current
			compare(t, e, true)
			unfolded := foldReaders(t, e)
			fold(t, e, false)
			compare(t, e, true)
			// The folds are the rollup's counts, not the raw calls': the
			// panels that read them answer as the rollup's states do,
			// reclassified calls included, which their FINAL forms do not.
			for file, want := range unfolded {
				if got := foldReaders(t, e)[file]; got != want {
					t.Errorf("%s over folded hours differs from its answer over calls_5m's states:\n got %s\nwant %s", file, got, want)
				}
			}
			// One INVALID_ARGUMENT call of the cut range's second whole
			// hour ingested again, as OK: that hour's fold is stale, the
			// whole hours before and after it are folded, and the panels
			// that read the raw calls from the first such hour on must
			// find it and not count the folded hours after it twice.
			stale := cut.from.Truncate(time.Hour).Add(2 * time.Hour)
			if !slices.ContainsFunc(calls, func(c pipeline.Call) bool { return c.Time.Truncate(time.Hour).Equal(stale.Add(time.Hour)) }) {
				t.Fatalf("no calls in %s, after the hour made stale", stale.Add(time.Hour))
			}
			var late []pipeline.Call
			for _, c := range calls {
				if c.Category == string(classify.InvalidArgument) && len(c.ArgKeys) > 0 && c.Time.Truncate(time.Hour).Equal(stale) {
					c.Category, c.IsFailure, c.IngestedMs = string(classify.OK), 0, c.IngestedMs+10
					c.ExpectedRetryable = classify.OK.ExpectedRetryable()
					late = append(late, c)
					break
				}
			}
			if len(late) != 1 {
				t.Fatalf("no INVALID_ARGUMENT call with arguments in %s", stale)
			}
			e.Insert(t, late)
			compare(t, e, true)
			// Folds that list no copies, as those made before
			// calls_copies_folded and calls_latest_folded existed: their
			// hours are searched raw.
			for _, table := range []string{"calls_copies_folded", "calls_latest_folded"} {
				if err := e.DB.Exec(context.Background(), "TRUNCATE TABLE "+table); err != nil {
					t.Fatal(err)
				}
			}
			compare(t, e, true)
			if err := e.DB.Exec(context.Background(), "SYSTEM START MERGES calls"); err != nil {
				t.Fatal(err)
			}
			if err := e.DB.Exec(context.Background(), "OPTIMIZE TABLE calls FINAL"); err != nil {
				t.Fatal(err)
			}
			compare(t, e, true)
			// changed changes the answer of each panel that reads table
			// from its answer before, once insert has added rows to the
			// table's current folds; it returns the answers after and how
			// many panels read the table.
			changed := func(before map[string]string, table, insert, what string) (map[string]string, int) {
				if err := e.DB.Exec(context.Background(), insert); err != nil {
					t.Fatal(err)
				}
				after := foldReaders(t, e)
				n := 0
				for _, tg := range targets {
					if strings.Contains(tg.sql, "FROM "+table) {
						n++
						if after[tg.file] == before[tg.file] {
							t.Errorf("%s answers as before with %s: it does not read them", tg.file, what)
						}
					}
				}
				return after, n
			}
			// The panels that read calls_5m_folded take their folded hours
			// from it: counts added to the current folds' rows (every call
			// once more, as INVALID_ARGUMENT, and every success once more
			// as EMPTY_RESULT) change each of their answers.
			after, n := changed(foldReaders(t, e), "calls_5m_folded", `INSERT INTO calls_5m_folded (hour, fold, tenant, server, tool, bucket, calls, invalid, ok, empty, identities, latest_invalid)
				SELECT hour, fold, tenant, server, tool, bucket, calls, calls, 0, ok, 0, 0
				FROM calls_5m_folded WHERE (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)`, "its folded hours' counts changed")
			if n < 6 {
				t.Errorf("only %d panels read calls_5m_folded", n)
			}
			// Likewise the panel that reads invalid_args_folded: every
			// folded argument counted twice.
			after, n = changed(after, "invalid_args_folded", `INSERT INTO invalid_args_folded (hour, fold, tenant, server, tool, session_key, arg_key, arg_value, calls)
				SELECT hour, fold, tenant, server, tool, session_key, arg_key, arg_value, calls
				FROM invalid_args_folded WHERE calls > 0 AND (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)`, "its folded hours' arguments counted twice")
			if n != 1 {
				t.Errorf("%d panels read invalid_args_folded, want the top offending arguments panel", n)
			}
			// Likewise the panel that reads calls_categories_folded: every
			// folded call counted twice; and then the table emptied, as
			// every fold made before it existed is, which sends the panel
			// back to the states and its answer before.
			before := after
			after, n = changed(before, "calls_categories_folded", `INSERT INTO calls_categories_folded (hour, fold, tenant, server, tool, category, calls)
				SELECT hour, fold, tenant, server, tool, category, calls
				FROM calls_categories_folded WHERE calls > 0 AND (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)`, "its folded hours' calls per category counted twice")
			if n != 1 {
				t.Errorf("%d panels read calls_categories_folded, want Misclassified retryables", n)
			}
			if err := e.DB.Exec(context.Background(), "TRUNCATE TABLE calls_categories_folded"); err != nil {
				t.Fatal(err)
			}
			after = foldReaders(t, e)
			for _, tg := range targets {
				if strings.Contains(tg.sql, "FROM calls_categories_folded") && after[tg.file] != before[tg.file] {
					t.Errorf("%s with unmarked folds differs from its answer over the states:\n got %s\nwant %s", tg.file, after[tg.file], before[tg.file])
				}
			}
			// Likewise the chain panels and Retry habits by client: every
			// folded chain and failure counted twice, and then their folds'
			// records gone, which sends them back to the raw calls and
			// their answers before.
			chainPanels := func() map[string]string {
				out := map[string]string{}
				for _, tg := range targets {
					if readsChainFolds(tg.sql) {
						_, rows := query(t, e, expand(t, e, tg, tg.sql))
						out[tg.file] = canonical(rows)
					}
				}
				return out
			}
			before = chainPanels()
			if len(before) != 7 {
				t.Errorf("%d panels read chains_folded or recalls_folded, want the four chain panels, Retry habits by client, Retry outcomes by client and Retry loops", len(before))
			}
			for _, table := range chainFoldRows {
				if err := e.DB.Exec(context.Background(), `INSERT INTO `+table+`
					SELECT * FROM `+table+` WHERE (hour, fold) IN (SELECT hour, fold FROM chain_current_folds)`); err != nil {
					t.Fatal(err)
				}
			}
			for file, got := range chainPanels() {
				if got == before[file] {
					t.Errorf("%s answers as before with its folded chains or failures counted twice: it does not read them", file)
				}
			}
			if err := e.DB.Exec(context.Background(), "TRUNCATE TABLE chain_folds"); err != nil {
				t.Fatal(err)
			}
			for file, got := range chainPanels() {
				if got != before[file] {
					t.Errorf("%s without chain folds differs from its answer with them:\n got %s\nwant %s", file, got, before[file])
				}
			}
			// Folds without its mark, as those made before the table
			// existed: their hours are read raw, and the answer is the
			// FINAL form's again.
			if err := e.DB.Exec(context.Background(), "TRUNCATE TABLE invalid_args_folded"); err != nil {
				t.Fatal(err)
			}
			for _, tg := range targets {
				if strings.Contains(tg.sql, "FROM invalid_args_folded") {
					final, err := os.ReadFile(filepath.Join("testdata", "final", tg.file+".sql"))
					if err != nil {
						t.Fatal(err)
					}
					_, want := query(t, e, expand(t, e, tg, string(final)))
					if got := foldReaders(t, e)[tg.file]; got != canonical(want) {
						t.Errorf("%s with unmarked folds differs from its FINAL form:\n got %s\nwant %s", tg.file, got, canonical(want))
					}
				}
			}
		})
	}
}

// reingested returns the copies of calls that later ingests store: every
// fourth call again unchanged, one millisecond later (a client resending),
// and every fifth but those in keep again with the other outcome (failed
// calls as OK, the others as INVALID_ARGUMENT) and misflagged flipped, two
// milliseconds later (a replay under new rules).
func reingested(calls []pipeline.Call, keep map[int]bool) (replay, reclassified []pipeline.Call) {
	for i, c := range calls {
		if i%4 == 0 {
			c.IngestedMs++
			replay = append(replay, c)
		}
		if i%5 == 0 && !keep[i] {
			if c.IsFailure == 1 {
				c.Category, c.IsFailure = string(classify.OK), 0
			} else {
				c.Category, c.IsFailure = string(classify.InvalidArgument), 1
			}
			c.Misflagged = 1 - c.Misflagged
			c.ExpectedRetryable = classify.Category(c.Category).ExpectedRetryable()
			c.IngestedMs += 2
			reclassified = append(reclassified, c)
		}
	}
	return replay, reclassified
}

// generatedCalls decodes and classifies generated traffic, as ingest does.
func generatedCalls(t testing.TB) []pipeline.Call {
	t.Helper()
	p := &pipeline.Processor{Classifier: classify.Default()}
	var out []pipeline.Call
	err := traffic.Generate(traffic.Config{Seed: 11, Sessions: 300}, func(line []byte) error {
		c, err := p.Line(line)
		if err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// busiestTool is the tool with the most calls (the first by name of those
// with as many), which a test's single-tool selection uses so that the
// panels it compares have rows.
func busiestTool(calls []pipeline.Call) string {
	n := map[string]int{}
	for _, c := range calls {
		n[c.Tool]++
	}
	tool := ""
	for name, k := range n {
		if k > n[tool] || k == n[tool] && name < tool {
			tool = name
		}
	}
	return tool
}

// canonical prints rows sorted, floats rounded to 12 significant digits,
// so that two results compare equal when they hold the same rows.
func canonical(rows [][]any) string {
	lines := rowLines(rows)
	sort.Strings(lines)
	return fmt.Sprintf("%d rows:\n  %s", len(lines), strings.Join(lines, "\n  "))
}

// rowLines prints each row as one line, its cells separated by "|",
// floats rounded to 12 significant digits and times in UTC.
func rowLines(rows [][]any) []string {
	lines := make([]string, len(rows))
	for i, row := range rows {
		cells := make([]string, len(row))
		for j, v := range row {
			switch x := v.(type) {
			case float64:
				if math.IsNaN(x) {
					cells[j] = "NaN"
				} else {
					cells[j] = fmt.Sprintf("%.12g", x)
				}
			case time.Time:
				cells[j] = x.UTC().Format(time.RFC3339)
			default:
				cells[j] = fmt.Sprint(x)
			}
		}
		lines[i] = strings.Join(cells, "|")
	}
	return lines
}

// TestSchemaPanelsMatchTheirFinalForms: the schema-violation panels read
// call_violations without FINAL; testdata/final_violations/<panel>.sql is
// each as it was with FINAL, the definition. Random violation rows are
// stored, then a third of the calls again under the same identity with
// another classification, version, detail or suggestion (a replay under new
// rules), in a second insert, with the calls rows that say which calls'
// arguments were validated (chtest.ReplayedViolations): each panel must
// equal its FINAL form, over a range of whole hours and over one that cuts
// hours at both ends. It must still once the complete hours are folded
// (compact.RollupHours: the panels then add up violations_folded and
// violation_outcomes_folded), after a late replay sends some folded hours
// back to the raw rows and after their refold, with the folds' marks gone
// (folds made before the tables existed), and after the table is merged.
// Counts added to the folds must change both panels' answers, so that each
// is shown to read them.
func TestSchemaPanelsMatchTheirFinalForms(t *testing.T) {
	ctx := context.Background()
	start := traffic.DefaultStart
	rows, again, calls := chtest.ReplayedViolations(12, 2000, start, 20*time.Hour)
	var late []pipeline.Violation // a fifth of the calls replayed once more, reclassified
	for _, v := range rows {
		if v.CallID%5 == 0 {
			v.IngestedMs = 9
			if v.IsFailure == 1 {
				v.Category, v.IsFailure = "OK", 0
			} else {
				v.Category, v.IsFailure = "INVALID_ARGUMENT", 1
			}
			v.Suggestion = "later"
			late = append(late, v)
		}
	}
	ranges := []macroRange{
		{from: start.Add(-time.Hour), to: start.Add(23 * time.Hour), interval: 5 * time.Minute},
		{from: start.Add(30 * time.Minute), to: start.Add(10*time.Hour + 15*time.Minute), interval: 5 * time.Minute},
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			compared := 0
			answers := func() map[string]string {
				out := map[string]string{}
				for _, tg := range panelTargets(t, "search_docs") {
					if strings.HasPrefix(tg.file, "schema_violation") {
						_, got := query(t, e, expandPanel(t, tg.sql, tg.vars, nil, ranges[0]))
						out[tg.file] = canonical(got)
					}
				}
				return out
			}
			compare := func(state string) {
				t.Helper()
				for _, tg := range panelTargets(t, "search_docs") {
					final, err := os.ReadFile(filepath.Join("testdata", "final_violations", tg.file+".sql"))
					if os.IsNotExist(err) {
						continue
					} else if err != nil {
						t.Fatal(err)
					}
					for i, r := range ranges {
						compared++
						_, got := query(t, e, expandPanel(t, tg.sql, tg.vars, nil, r))
						_, want := query(t, e, expandPanel(t, string(final), tg.vars, nil, r))
						if len(want) < 5 {
							t.Errorf("%s: %d rows; the comparison would prove little", tg.file, len(want))
						}
						if g, w := canonical(got), canonical(want); g != w {
							t.Errorf("%s (%s, range %d) differs from its FINAL form:\n got %s\nwant %s", tg.file, state, i, g, w)
						}
					}
				}
			}
			fold := func(state string) {
				t.Helper()
				if _, err := compact.RollupHours(ctx, e.DB, time.Now(), time.Since(start)+48*time.Hour, 0); err != nil {
					t.Fatal(err)
				}
				var n []struct {
					N uint64 `ch:"n"`
				}
				if err := e.DB.Select(ctx, &n, "SELECT count() AS n FROM violations_folded WHERE reason != '' AND (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)"); err != nil {
					t.Fatal(err)
				}
				if n[0].N == 0 {
					t.Fatalf("%s: the current folds hold no violation; the folded comparison would prove nothing", state)
				}
			}
			e.InsertTools(t, pipeline.ToolRows{Violations: rows})
			e.InsertTools(t, pipeline.ToolRows{Violations: again})
			e.Insert(t, calls)
			compare("raw")
			fold("folded")
			compare("folded")
			e.InsertTools(t, pipeline.ToolRows{Violations: late}) // the folds of the hours it touches are no longer current
			compare("late replay")
			fold("refolded")
			compare("refolded")
			// Counts added to the current folds (every violating call once
			// more, every outcome once more) change both panels' answers.
			before := answers()
			for _, q := range []string{
				`INSERT INTO violations_folded (hour, fold, tenant, server, tool, side, path, reason, suggestion, calls, invalid, accepted)
				SELECT hour, fold, tenant, server, tool, side, path, reason, suggestion, calls, invalid, accepted
				FROM violations_folded WHERE reason != '' AND (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)`,
				`INSERT INTO violation_outcomes_folded (hour, fold, second, tenant, server, tool, outcome, calls)
				SELECT hour, fold, second, tenant, server, tool, outcome, calls
				FROM violation_outcomes_folded WHERE outcome != '' AND (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)`,
			} {
				if err := e.DB.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			for file, a := range answers() {
				if a == before[file] {
					t.Errorf("%s answers as before with its folded hours' counts changed: it does not read them", file)
				}
			}
			// Folds without the tables' marks, as those made before the
			// tables existed: their hours are read raw.
			for _, table := range []string{"violations_folded", "violation_outcomes_folded"} {
				if err := e.DB.Exec(ctx, "TRUNCATE TABLE "+table); err != nil {
					t.Fatal(err)
				}
			}
			compare("unmarked folds")
			for _, table := range []string{"call_violations", "calls"} {
				if err := e.DB.Exec(ctx, "OPTIMIZE TABLE "+table+" FINAL"); err != nil {
					t.Fatal(err)
				}
			}
			compare("merged")
			if compared != 24 {
				t.Errorf("%d comparisons, want both panels over both ranges in each of six states", compared)
			}
		})
	}
}

// withRetryAfter gives every failure of cs the retry-after hint d.
func withRetryAfter(cs []pipeline.Call, d time.Duration) []pipeline.Call {
	for i := range cs {
		if cs[i].IsFailure == 1 {
			cs[i].RetryAfterMs = d.Milliseconds()
		}
	}
	return cs
}

// stormyCalls is generatedCalls with two retry storms of the busiest tool
// (busiestTool, returned), copies of one of its RATE_LIMITED failures: one
// that starts at 12:50 and retries every 50 s until 13:23 (40 calls), past
// the 13:10 at which the chain fold of 12:00 stops reading (its fold is
// open, and the panels, which follow it further, must not take it), and one
// that starts at 14:58 and ends at 15:01:20 (5 calls), which that hour's
// fold follows into the next hour. The drilldown's panels, which show the
// busiest tool, see them too. The first storm's failures ask to wait 50 s,
// exactly the gap (no retry before the hint); the second's 60 s (each retry
// too soon).
func stormyCalls(t testing.TB) ([]pipeline.Call, string) {
	t.Helper()
	calls := generatedCalls(t)
	busiest := busiestTool(calls)
	i := slices.IndexFunc(calls, func(c pipeline.Call) bool {
		return c.IsFailure == 1 && c.Continuation == 0 && c.Category == string(classify.RateLimited) && c.Tool == busiest
	})
	if i < 0 {
		t.Fatal("no RATE_LIMITED call to copy into a retry storm")
	}
	day := traffic.DefaultStart.Truncate(24 * time.Hour)
	calls = append(calls, withRetryAfter(retryStorm(calls[i], "storm-open", day.Add(12*time.Hour+50*time.Minute), 40, 50*time.Second), 50*time.Second)...)
	calls = append(calls, withRetryAfter(retryStorm(calls[i], "storm-closed", day.Add(14*time.Hour+58*time.Minute), 5, 50*time.Second), time.Minute)...)
	return calls, busiest
}

// rawThenFolded inserts calls and replay on each engine and runs check
// twice: over the raw calls alone, then once the retention job has folded
// the complete hours' chains (compact.RollupChains), which the chain panels
// read up to their bound.
func rawThenFolded(t *testing.T, calls, replay []pipeline.Call, check func(t *testing.T, e *chtest.Engine, folded bool)) {
	t.Helper()
	day := traffic.DefaultStart.Truncate(24 * time.Hour)
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, calls)
			e.Insert(t, replay)
			for _, folded := range []bool{false, true} {
				if folded {
					if _, err := compact.RollupChains(context.Background(), e.DB, time.Now(), time.Since(day)+48*time.Hour, 0); err != nil {
						t.Fatal(err)
					}
				}
				check(t, e, folded)
			}
		})
	}
}

// retryStorm is n calls of a new session key, gap apart from start, each a
// copy of failed: all failed but the last, which succeeds. They are one
// retry chain from start to its last call.
func retryStorm(failed pipeline.Call, session string, start time.Time, n int, gap time.Duration) []pipeline.Call {
	out := make([]pipeline.Call, n)
	for i := range out {
		c := failed
		c.SessionID, c.SessionKey = session, session
		c.Time = start.Add(time.Duration(i) * gap)
		c.TimeMs = c.Time.UnixMilli()
		c.RequestID = fmt.Sprint(i)
		c.CallID = fnv(fmt.Sprintf("%s/%d", session, i))
		if i == n-1 {
			c.Category, c.IsFailure, c.IsError, c.RPCError, c.Misflagged = string(classify.OK), 0, 0, 0, 0
			c.ExpectedRetryable = classify.OK.ExpectedRetryable()
		}
		out[i] = c
	}
	return out
}
