package dashboards_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/traffic"
)

// TestToolCallsPanel checks the drilldown's Calls panel
// (panels/tool_calls.sql) against its FINAL form (testdata/final), row by
// row in order, with its narrowing variables set: categories, an argument
// value under every key, under the key that has it and under one that does
// not, a session, and values that Grafana's quoting formats would break
// out of a string literal with (a quote, a trailing backslash, a comma and
// parentheses, a percent sign, Chinese text). The traffic is generated,
// then ingested again unchanged and again reclassified (reingested), so
// that each call must be listed once, as its latest ingest; the comparison
// runs after each ingest on both engines.
func TestToolCallsPanel(t *testing.T) {
	calls := generatedCalls(t)
	tool := busiestTool(calls)
	// The tool's most common argument value, a key that has it and one of
	// the tool's keys that never has it.
	counts := map[[2]string]int{}
	keys := map[string]bool{}
	for _, c := range calls {
		if c.Tool != tool {
			continue
		}
		for i, k := range c.ArgKeys {
			counts[[2]string{k, c.ArgValues[i]}]++
			keys[k] = true
		}
	}
	var common [2]string
	for kv, n := range counts {
		if n > counts[common] || n == counts[common] && (kv[0] < common[0] || kv[0] == common[0] && kv[1] < common[1]) {
			common = kv
		}
	}
	otherKey := ""
	for k := range keys {
		if k != common[0] && counts[[2]string{k, common[1]}] == 0 && (otherKey == "" || k < otherKey) {
			otherKey = k
		}
	}
	if counts[common] < 5 || otherKey == "" {
		t.Fatalf("tool %s: argument value %v in %d calls, other key %q: too little to narrow by", tool, common, counts[common], otherKey)
	}
	// Values a quoting format would break: each given to three calls of
	// the tool under the key "q", one of which is OK and two EMPTY_RESULT
	// (set, not reclassified below).
	hostile := []string{`fin'ace\`, `a,b) OR (1=1`, `50%`, `未找到 "x"`}
	n := 0
	set := map[int]bool{}
	for i := range calls {
		if calls[i].Tool != tool || n >= 3*len(hostile) {
			continue
		}
		v := hostile[n/3]
		calls[i].ArgsJSON = fmt.Sprintf(`{"q":%q}`, v)
		calls[i].ArgKeys, calls[i].ArgValues = []string{"q"}, []string{v}
		calls[i].Category, calls[i].IsFailure = string(classify.EmptyResult), 0
		if n%3 == 0 {
			calls[i].Category = string(classify.OK)
		}
		calls[i].ExpectedRetryable = classify.Category(calls[i].Category).ExpectedRetryable()
		set[i] = true
		n++
	}
	// The session with the most calls of the tool, and one call of the
	// tool moved to a session whose key quoting would break.
	sessions := map[string]int{}
	for _, c := range calls {
		if c.Tool == tool {
			sessions[c.SessionKey]++
		}
	}
	session := ""
	for k, n := range sessions {
		if n > sessions[session] || n == sessions[session] && k < session {
			session = k
		}
	}
	if sessions[session] < 3 {
		t.Fatalf("tool %s: at most %d calls in a session", tool, sessions[session])
	}
	const oddSession = `s'1\`
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i].Tool == tool && !set[i] {
			calls[i].SessionKey, set[i] = oddSession, true
			break
		}
	}
	replay, reclassified := reingested(calls, set)

	var tg panelTarget
	for _, p := range panelTargets(t, tool) {
		if p.file == "tool_calls" {
			tg = p
		}
	}
	if tg.sql == "" {
		t.Fatal("no panel reads panels/tool_calls.sql")
	}
	final, err := os.ReadFile(filepath.Join("testdata", "final", "tool_calls.sql"))
	if err != nil {
		t.Fatal(err)
	}
	type narrowing struct {
		name       string
		categories []string // nil: All
		key        string   // "": All
		value      string
		session    string
		want       int // rows wanted, -1: some
	}
	cases := []narrowing{
		{name: "nothing", want: 100},
		{name: "one category", categories: []string{"EMPTY_RESULT"}, want: -1},
		{name: "two categories", categories: []string{"INVALID_ARGUMENT", "OK"}, want: -1},
		{name: "a value under any key", value: common[1], want: -1},
		{name: "a value under its key", key: common[0], value: common[1], want: -1},
		{name: "a value under another key", key: otherKey, value: common[1], want: 0},
		{name: "a value and a category", value: common[1], categories: []string{"OK"}, want: -1},
		{name: "a key without a value", key: otherKey, want: 100},
		{name: "a session", session: session, want: -1},
		{name: "a session and a category", session: session, categories: []string{"OK"}, want: -1},
		{name: "a session whose key needs quoting", session: oddSession, want: 1},
	}
	for _, v := range hostile {
		cases = append(cases,
			narrowing{name: "value " + v, value: v, want: 3},
			narrowing{name: "value " + v + " under its key, empty", key: "q", value: v, categories: []string{"EMPTY_RESULT"}, want: 2})
	}
	r := macroRange{from: traffic.DefaultStart.Add(-time.Hour), to: traffic.DefaultStart.Add(23 * time.Hour), interval: 5 * time.Minute}
	compare := func(t *testing.T, e *chtest.Engine, state string) {
		for _, c := range cases {
			vars := maps.Clone(tg.vars)
			vars["category"] = all()
			if c.categories != nil {
				vars["category"] = values(c.categories...)
			}
			vars["arg_key"] = all()
			if c.key != "" {
				vars["arg_key"] = values(c.key)
			}
			vars["arg_value"] = values(c.value)
			vars["session"] = values(c.session)
			sel := tg
			sel.vars = vars
			_, got := query(t, e, sel.expand(t, e, tg.sql, r))
			_, want := query(t, e, sel.expand(t, e, string(final), r))
			if c.want >= 0 && len(want) != c.want || c.want < 0 && len(want) == 0 {
				t.Errorf("%s, %s: the FINAL form lists %d calls, want %d (-1: some): %s", state, c.name, len(want), c.want, ordered(want))
			}
			if g, w := ordered(got), ordered(want); g != w {
				t.Errorf("%s, %s: the panel differs from its FINAL form:\n got %s\nwant %s", state, c.name, g, w)
			}
		}
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.StopMerges(t)
			e.Insert(t, calls)
			e.Insert(t, replay)
			compare(t, e, "resent")
			e.Insert(t, reclassified)
			compare(t, e, "reclassified")
			if err := e.DB.Exec(context.Background(), "SYSTEM START MERGES calls"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// ordered prints rows in their order, one per line.
func ordered(rows [][]any) string {
	return fmt.Sprintf("%d rows:\n  %s", len(rows), strings.Join(rowLines(rows), "\n  "))
}
