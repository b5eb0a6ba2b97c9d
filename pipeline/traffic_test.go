package pipeline_test

import (
	"slices"
	"testing"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/traffic"
)

// TestClassifierOnGeneratedTraffic runs the decoder and the classifier over
// the generator's stories, whose wire shapes copy real SDKs, and pins what
// each story may be classified as: successes that merely mention "timeout"
// or "connection pool" are not failures, every failure of a story has the
// story's category, and each story shows that category at least once.
func TestClassifierOnGeneratedTraffic(t *testing.T) {
	allowed := map[traffic.Story][]string{
		"success":            {},
		"repeat_after_pause": {},
		"input_required":     {},
		"misspelled_enum":    {},
		"expired_token":      {"UNAUTHENTICATED"},
		"pool_exhausted":     {"UNAVAILABLE"},
		"rate_limited":       {"RATE_LIMITED"},
		"invalid_params":     {"INVALID_ARGUMENT"},
		"unknown_tool":       {"UNKNOWN_TOOL"},
		"upstream_timeout":   {"UPSTREAM_TIMEOUT", "UNAVAILABLE"}, // UNAVAILABLE: the client gave up, no response
		"internal_error":     {"INTERNAL"},
		"not_found":          {"NOT_FOUND"},
		"permission_denied":  {"PERMISSION_DENIED"},
		"hidden_failure":     {"INTERNAL", "UNAVAILABLE", "UPSTREAM_TIMEOUT", "UNAUTHENTICATED", "RATE_LIMITED"},
	}
	p := &pipeline.Processor{Classifier: classify.Default()}
	seen := map[traffic.Story]map[string]int{}
	misspelled := 0
	_, err := traffic.GenerateLabeled(traffic.Config{Seed: 11, Sessions: 400}, func(line []byte, s traffic.Story) error {
		c, err := p.Line(line)
		if err != nil {
			t.Fatalf("story %s: %v\n%s", s, err, line)
		}
		if seen[s] == nil {
			seen[s] = map[string]int{}
		}
		seen[s][c.Category]++
		want, ok := allowed[s]
		if !ok {
			t.Fatalf("story %s has no expectation here; add one", s)
		}
		if c.IsFailure == 1 && !slices.Contains(want, c.Category) {
			t.Errorf("story %s: %s (rule %s) for %q", s, c.Category, c.ClassRule, c.Message)
		}
		if s == "hidden_failure" && c.IsFailure == 1 && c.Misflagged != 1 {
			t.Errorf("hidden failure not marked misflagged: %q", c.Message)
		}
		if s == "misspelled_enum" && slices.Contains(c.ArgValues, "finace") {
			misspelled++
			if c.Category != "EMPTY_RESULT" {
				t.Errorf("department=finace: %s, want EMPTY_RESULT (%q)", c.Category, c.Message)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range allowed {
		for _, cat := range want[:min(1, len(want))] {
			if seen[s][cat] == 0 {
				t.Errorf("story %s never classified %s: %v", s, cat, seen[s])
			}
		}
	}
	if misspelled == 0 || seen["hidden_failure"]["INTERNAL"] == 0 {
		t.Errorf("fixture lost its seed stories: %d finace calls, %v", misspelled, seen["hidden_failure"])
	}
}
