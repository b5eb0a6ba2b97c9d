package dashboards_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/queries"
)

// TestMisclassificationsPanelMatchesTheAPI checks that the Misclassified
// retryables panel, its two queries' rows merged as Grafana merges them,
// finds what the API finds (queries.Misclassifications, 60 s retry window,
// the panel's min_chains): the chain kinds from the first query,
// retried_non_idempotent included, and the misflagged calls from the second
// (flag_few has fewer than min_chains). refund declares no hints, get_invoice is
// read-only, upstream_never has no definition, rebuild declared no hints
// until after the range, when an idempotent version replaced it, and
// escalate and calm changed version inside the two days before the range's
// end that the panel searches first: escalate from read-only to no hints
// (reported), calm the other way (not reported).
func TestMisclassificationsPanelMatchesTheAPI(t *testing.T) {
	ctx := context.Background()
	fixture := calls(
		chains("refund", 6, 2, classify.UpstreamTimeout, "", true),
		chains("get_invoice", 6, 2, classify.UpstreamTimeout, "", true),
		chains("upstream_never", 6, 0, classify.Unavailable, "", true),
		chains("rebuild", 5, 1, classify.Unavailable, "", true),
		chains("create_same", 5, 0, classify.InvalidArgument, "", true),
		chains("escalate", 5, 1, classify.UpstreamTimeout, "", true),
		chains("calm", 5, 1, classify.UpstreamTimeout, "", true),
		misflaggedCalls("flag_wrong", 5, classify.OK, 20*hr),
		misflaggedCalls("flag_hidden", 6, classify.Internal, 20*hr),
		misflaggedCalls("flag_few", 1, classify.Internal, 20*hr),
	)
	var defs pipeline.ToolRows
	r := macroRange{from: now.Add(-24 * hr), to: now.Add(-30 * minute), interval: 5 * minute}
	chtest.AddToolVersion(&defs, "acme", "kb", "refund", 1, -1, -1, now.Add(-40*hr))
	chtest.AddToolVersion(&defs, "acme", "kb", "get_invoice", 2, 1, -1, now.Add(-40*hr))
	chtest.AddToolVersion(&defs, "acme", "kb", "rebuild", 3, -1, -1, now.Add(-40*hr))
	chtest.AddToolVersion(&defs, "acme", "kb", "rebuild", 4, -1, 1, now.Add(-10*minute)) // after the range's end
	chtest.AddToolVersion(&defs, "acme", "kb", "escalate", 5, 1, -1, now.Add(-20*hr))
	chtest.AddToolVersion(&defs, "acme", "kb", "escalate", 6, -1, -1, now.Add(-3*hr))
	chtest.AddToolVersion(&defs, "acme", "kb", "calm", 7, -1, -1, now.Add(-20*hr))
	chtest.AddToolVersion(&defs, "acme", "kb", "calm", 8, -1, 1, now.Add(-2*hr))
	// The panel's queries, A then B (retries.go).
	targets := []panelTarget{panelTargetOf(t, "refund", "misclassifications"), panelTargetOf(t, "refund", "misclassifications_misflagged")}
	target := &targets[0]
	var minChains int64
	if _, err := fmt.Sscan(target.vars["min_chains"].current(), &minChains); err != nil {
		t.Fatalf("min_chains %q: %v", target.vars["min_chains"].current(), err)
	}
	// The panel's range is [$__fromTime, $__toTime] in whole seconds.
	f := queries.Filter{From: time.Unix(r.from.Unix(), 0), To: time.Unix(r.to.Unix()+1, 0)}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, fixture)
			e.InsertTools(t, defs)
			var got []string
			for i, tg := range targets {
				_, rows := query(t, e, tg.expand(t, e, tg.sql, r))
				for _, row := range rows {
					if (row[0] == queries.KindMisflagged) != (i == 1) {
						t.Errorf("query %s returned %v", tg.file, row)
					}
					got = append(got, fmt.Sprintf("%v %v %v chains=%v calls=%v recovered=%v total=%v", row[:7]...))
				}
			}
			api, err := queries.Misclassifications(ctx, e.DB, f, time.Minute, minChains)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			risky := map[string]bool{}
			flagged := 0
			for _, m := range api {
				want = append(want, fmt.Sprintf("%v %v %v chains=%v calls=%v recovered=%v total=%v", m.Kind, m.Tool, m.Category, m.Chains, m.Calls, m.Recovered, m.Total))
				if m.Kind == queries.KindMisflagged {
					flagged++
				}
				if m.Kind == queries.KindRetriedNonIdempotent {
					risky[m.Tool] = true
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("panel and API differ\npanel %q\n  API %q", got, want)
			}
			if flagged != 2 {
				t.Errorf("%d misflagged rows, want flag_wrong's and flag_hidden's: the fixture tests less than it says", flagged)
			}
			if !risky["refund"] || !risky["rebuild"] || !risky["escalate"] || len(risky) != 3 {
				t.Errorf("retried_non_idempotent for %v, want refund, rebuild and escalate: the fixture tests less than it says", risky)
			}
		})
	}
}
