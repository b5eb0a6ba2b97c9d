package pipeline

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/traffic"
)

// TestGeneratedTrafficAgainstItsDefinitions validates the generator's calls
// against the tool lists of traffic.ToolsList: the calls of healthy stories
// pass their schemas, and the failure stories break them where they should
// (the seed article's department=finace among them, with finance
// suggested). It keeps the demo's definitions and calls in step.
func TestGeneratedTrafficAgainstItsDefinitions(t *testing.T) {
	tl := newTestTools()
	p := &Processor{Classifier: classify.Default(), Decode: DecodeOptions{Now: testNow}, Tools: tl}
	cfg := traffic.Config{Seed: 11, Sessions: 400}
	var body strings.Builder
	if err := traffic.ToolsList(cfg, func(line []byte) error { body.Write(line); body.WriteByte('\n'); return nil }); err != nil {
		t.Fatal(err)
	}
	res, err := p.ReadNDJSON(strings.NewReader(body.String()), "default", testNow(), func(Call) {}, func(d DeadLetter) { t.Errorf("dead: %s", d.Reason) })
	if err != nil || res.ToolLists != 10 {
		t.Fatalf("tool lists: %+v %v", res, err)
	}
	story := map[uint64]traffic.Story{}
	validated := map[uint64]bool{}
	_, err = traffic.GenerateLabeled(cfg, func(line []byte, s traffic.Story) error {
		c, err := p.Line(line)
		if err != nil {
			return fmt.Errorf("story %s: %w", s, err)
		}
		story[c.CallID] = s
		if c.ArgsValidated == 1 {
			validated[c.CallID] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	byStory := map[traffic.Story]map[string]int{}
	suggested := 0
	for _, v := range tl.pending.Violations {
		if v.Side == SideArguments && !validated[v.CallID] {
			t.Errorf("call %d has argument violations and args_validated 0", v.CallID)
		}
		s := story[v.CallID]
		if byStory[s] == nil {
			byStory[s] = map[string]int{}
		}
		byStory[s][v.Tool+" "+v.Side+" "+v.Path+" "+v.Reason]++
		if v.Path == "department" && v.Suggestion == "finance" {
			suggested++
		}
	}
	for _, s := range []traffic.Story{traffic.StorySuccess, traffic.StoryRepeatAfterPause, traffic.StoryRateLimited,
		traffic.StoryInputRequired, traffic.StoryPermissionDenied, traffic.StoryNotFound} {
		if len(byStory[s]) > 0 {
			t.Errorf("story %s breaks the definitions: %v", s, byStory[s])
		}
	}
	for _, want := range []struct {
		story traffic.Story
		key   string
	}{
		{traffic.StoryMisspelledEnum, "search_docs arguments department not_in_enum"},
		{traffic.StoryInvalidParams, "get_forecast arguments days out_of_range"},
		{traffic.StoryInvalidParams, "update_ticket arguments status not_in_enum"},
		{traffic.StoryInvalidParams, "refund arguments currency not_in_enum"},
		{traffic.StoryInvalidParams, "search_docs arguments limit out_of_range"},
		{traffic.StoryHiddenFailure, "lookup_customer result customer_id missing_required"},
	} {
		if byStory[want.story][want.key] == 0 {
			keys := make([]string, 0, len(byStory[want.story]))
			for k := range byStory[want.story] {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			t.Errorf("story %s: no %q; got %v", want.story, want.key, keys)
		}
	}
	if suggested == 0 {
		t.Error("no department violation suggests finance")
	}
	if len(validated) < len(story)/2 {
		t.Errorf("%d of %d calls validated; unknown tools aside, nearly all should be", len(validated), len(story))
	}
}
