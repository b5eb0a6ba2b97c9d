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
// retryables panel finds the chain kinds the API finds
// (queries.Misclassifications, 60 s retry window, the panel's min_chains),
// retried_non_idempotent included: refund declares no hints, get_invoice is
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
	var target *panelTarget
	for _, tg := range panelTargets(t, "refund") {
		if tg.file == "misclassifications" {
			target = &tg
			break
		}
	}
	if target == nil {
		t.Fatal("no misclassifications panel")
	}
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
			_, rows := query(t, e, target.expand(t, e, target.sql, r))
			var got []string
			for _, row := range rows {
				if row[0] != queries.KindMisflagged {
					got = append(got, fmt.Sprintf("%v %v %v chains=%v calls=%v recovered=%v", row[:6]...))
				}
			}
			api, err := queries.Misclassifications(ctx, e.DB, f, time.Minute, minChains)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			risky := map[string]bool{}
			for _, m := range api {
				if m.Kind != queries.KindMisflagged {
					want = append(want, fmt.Sprintf("%v %v %v chains=%v calls=%v recovered=%v", m.Kind, m.Tool, m.Category, m.Chains, m.Calls, m.Recovered))
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
			if !risky["refund"] || !risky["rebuild"] || !risky["escalate"] || len(risky) != 3 {
				t.Errorf("retried_non_idempotent for %v, want refund, rebuild and escalate: the fixture tests less than it says", risky)
			}
		})
	}
}
