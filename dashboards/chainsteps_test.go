package dashboards_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// chainStepFiles are the statements that cut retry chains from the raw
// calls with the same array steps: the chain panels and alerts, the API's
// chain statements and the chain fold. Each is a self-contained file (the
// Grafana plugin runs a panel's SQL as it is), so the steps are written out
// in each; TestChainStepsMatchAcrossFiles keeps the copies one definition.
var chainStepFiles = []string{
	"panels/retry_outcomes.sql",
	"panels/retry_outcomes_over_time.sql",
	"panels/retry_recoveries.sql",
	"panels/misclassifications.sql",
	"panels/client_outcomes.sql",
	"alerts/non_retryable_recovers.sql",
	"alerts/retried_non_retryable.sql",
	"alerts/retryable_never_recovers.sql",
	"../queries/retry_outcomes.sql",
	"../queries/misclassifications.sql",
	"../queries/retry_loops.sql",
	"../compact/fold_chains_hour.sql",
}

// carried matches the columns a statement carries through the steps beside
// the chain arrays (its grouping keys, under the names it gives them).
var carried = regexp.MustCompile(`(?:[A-Za-z0-9_]+(?:\([^()]*\))? AS )?(?:tool|key|tenant|server|session|client)_(?:name)?\b,?\s*`)

// carriedLine matches a line that only defines a carried column, whatever
// its expression (the API's tool_ is the pair's key with ByPair).
var carriedLine = regexp.MustCompile(`^.+ AS (?:tool|key|tenant|server|session|client)_(?:name)?,?$`)

// chainSteps returns the lines of file from the chain starts and ends (st,
// en) down to the calls' grouping into their sequence, trimmed, without the
// carried columns, and with the API's bound retry window written as the
// panels' 60 s.
func chainSteps(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		in = in || strings.Contains(l, "-- st: a chain starts")
		if !in {
			continue
		}
		l = strings.TrimSpace(l)
		if carriedLine.MatchString(l) {
			continue
		}
		l = strings.ReplaceAll(carried.ReplaceAllString(l, ""), "@window_ms", "60000")
		if l != "" {
			out = append(out, l)
		}
		if strings.Contains(l, "arraySort(groupArray((ts_ms") {
			return out
		}
	}
	t.Fatalf("%s: no chain steps from \"-- st: a chain starts\" to the calls' arraySort(groupArray(...))", file)
	return nil
}

// TestChainStepsMatchAcrossFiles: every statement that cuts retry chains
// from the raw calls does it with the same steps (chainStepFiles), so that a
// change to how chains are cut cannot reach some of them only.
func TestChainStepsMatchAcrossFiles(t *testing.T) {
	want := chainSteps(t, chainStepFiles[0])
	if len(want) < 25 {
		t.Fatalf("%s: only %d lines of chain steps", chainStepFiles[0], len(want))
	}
	for _, f := range chainStepFiles[1:] {
		got := chainSteps(t, f)
		for i := 0; i < max(len(got), len(want)); i++ {
			var g, w string
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Errorf("%s differs from %s in its chain steps, line %d of them:\n got %q\nwant %q", f, chainStepFiles[0], i+1, g, w)
				break
			}
		}
	}
}

// recallStepFiles are the statements that find each failure's next call
// with the same array steps: the re-call panels, the API's re-calls and the
// retention job's fold of the failures. TestRecallStepsMatchAcrossFiles
// keeps their copies one definition, as TestChainStepsMatchAcrossFiles does
// the chains'.
var recallStepFiles = []string{
	"panels/recalls.sql",
	"panels/client_habits.sql",
	"../queries/recalls.sql",
	"../compact/fold_recalls_hour.sql",
}

// recallSteps returns the lines of file from the sequence's times (t0) to
// the next call's same arguments (same), trimmed, without comments, with
// the API's bound retry window written as the panels' 60 s.
func recallSteps(t *testing.T, file string) []string {
	t.Helper()
	var out []string
	in := false
	for _, l := range sqlLines(t, file) {
		l = strings.TrimSpace(l)
		in = in || strings.HasSuffix(l, " AS t0,")
		if !in {
			continue
		}
		out = append(out, strings.ReplaceAll(l, "@window_ms", "60000"))
		if strings.HasSuffix(l, " AS same,") {
			return out
		}
	}
	t.Fatalf("%s: no re-call steps from \"... AS t0,\" to \"... AS same,\"", file)
	return nil
}

// TestRecallStepsMatchAcrossFiles: every statement that finds a failure's
// next call from the raw calls does it with the same steps
// (recallStepFiles): copies dropped, the next call's time, within the
// window, with the same arguments.
func TestRecallStepsMatchAcrossFiles(t *testing.T) {
	want := recallSteps(t, recallStepFiles[0])
	for _, file := range recallStepFiles[1:] {
		if got := recallSteps(t, file); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s cuts its re-calls otherwise than %s:\n%s\n---\n%s", file, recallStepFiles[0], strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
