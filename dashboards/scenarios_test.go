package dashboards_test

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcplens/mcplens/pipeline/classify"
)

// scenario is fixture data for one alert rule: calls that must make it fire
// for the listed tools, mixed with calls that must not (each on its own
// tool, named for the reason it stays quiet).
type scenario struct {
	rule  string             // AlertRule.Title
	calls []fx               // everything inserted
	fire  map[string]float64 // tool_name → the value that fires
}

const (
	minute = time.Minute
	hr     = time.Hour
)

// spikeTool is a tool with a 7-day baseline of baseN calls (baseHits of
// category hit, spread over the hours before the last one) and, in the last
// hour, lastN calls of which lastHits are hit. For EMPTY_RESULT the other
// calls are OK; for INVALID_ARGUMENT too.
func spikeTool(tool string, hit classify.Category, baseN, baseHits, lastN, lastHits int) []fx {
	var out []fx
	for i := 0; i < baseN; i++ {
		c := classify.OK
		if i < baseHits {
			c = hit
		}
		out = append(out, fx{at: 2*hr + time.Duration(i)*hr + 7*minute, tool: tool, session: fmt.Sprintf("%s-b%d", tool, i), category: c})
	}
	for i := 0; i < lastN; i++ {
		c := classify.OK
		if i < lastHits {
			c = hit
		}
		out = append(out, fx{at: minute + time.Duration(i)*50*time.Second, tool: tool, session: fmt.Sprintf("%s-l%d", tool, i), category: c})
	}
	return out
}

// lastHour edits the calls of fs made in the last hour, the i-th of them
// with edit(i, f).
func lastHour(fs []fx, edit func(i int, f *fx)) []fx {
	i := 0
	for j := range fs {
		if fs[j].at < hr {
			edit(i, &fs[j])
			i++
		}
	}
	return fs
}

// chains returns n retry chains of tool, one session each, started in the
// last hours; the first recovered of them end with a success.
func chains(tool string, n, recovered int, first classify.Category, declared string, sameArgs bool) []fx {
	var out []fx
	for i := 0; i < n; i++ {
		end := first
		if i < recovered {
			end = classify.OK
		}
		out = append(out, chain(tool, fmt.Sprintf("%s-%d", tool, i), 2*hr+time.Duration(i)*5*minute, first, declared, sameArgs, end)...)
	}
	return out
}

// recalled returns n failures of tool in the last hour, one session each;
// the first same of them are followed 20 s later by an identical call that
// succeeds, the next changed by a call with other arguments.
func recalled(tool string, n, same, changed int) []fx {
	var out []fx
	for i := 0; i < n; i++ {
		s := fmt.Sprintf("%s-%d", tool, i)
		at := 50*minute - time.Duration(i)*2*minute
		out = append(out, fx{at: at, tool: tool, session: s, category: classify.NotFound, args: `{"id":"7"}`, message: "not found"})
		switch {
		case i < same:
			out = append(out, fx{at: at - 20*time.Second, tool: tool, session: s, args: `{"id":"7"}`})
		case i < same+changed:
			out = append(out, fx{at: at - 20*time.Second, tool: tool, session: s, args: `{"id":"8"}`})
		}
	}
	return out
}

// hinted returns n RATE_LIMITED failures of tool in the last hour, one
// session each, with a retry-after hint of hint; each is called again
// (unchanged, successfully) after gaps[i % len(gaps)], none when that is 0.
func hinted(tool string, n int, hint time.Duration, gaps ...time.Duration) []fx {
	var out []fx
	for i := 0; i < n; i++ {
		s := fmt.Sprintf("%s-%d", tool, i)
		at := 55*minute - time.Duration(i)*2*minute
		out = append(out, fx{at: at, tool: tool, session: s, category: classify.RateLimited, retryAfter: hint, message: "rate limited"})
		if g := gaps[i%len(gaps)]; g > 0 {
			out = append(out, fx{at: at - g, tool: tool, session: s})
		}
	}
	return out
}

// unknownCalls returns n UNKNOWN_TOOL calls (JSON-RPC -32602) of the name
// tool, one session each, 5 minutes apart from 5 minutes before ago.
func unknownCalls(tool string, n int, ago time.Duration) []fx {
	return repeat(n, fx{tool: tool, category: classify.UnknownTool, code: -32602, message: "unknown tool: " + tool}, func(i int, f *fx) {
		f.at, f.session = ago+time.Duration(i+1)*5*minute, fmt.Sprintf("%s-%d", tool, i)
	})
}

func misflaggedCalls(tool string, n int, c classify.Category, within time.Duration) []fx {
	return repeat(n, fx{tool: tool, category: c, misflagged: true}, func(i int, f *fx) {
		f.at = within - time.Duration(i+1)*within/time.Duration(n+1)
		f.session = fmt.Sprintf("%s-%d", tool, i)
	})
}

// relabel re-ingests every call of fs later as cat, misflagged or not.
func relabel(fs []fx, cat classify.Category, misflagged bool) []fx {
	for i := range fs {
		fs[i].latest, fs[i].latestMisflagged = cat, misflagged
	}
	return fs
}

// notMisflagged clears the misflagged flag of every call of fs.
func notMisflagged(fs []fx) []fx {
	for i := range fs {
		fs[i].misflagged = false
	}
	return fs
}

// repeatCategory is n times category c, a chain's outcomes.
func repeatCategory(n int, c classify.Category) []classify.Category {
	return slices.Repeat([]classify.Category{c}, n)
}

func concat(parts ...[]fx) []fx {
	var out []fx
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// faultTool returns n calls of tool in the last 15 minutes, one session
// each; the first of them are of the categories hits, the rest OK.
func faultTool(tool string, n int, hits ...classify.Category) []fx {
	return repeat(n, fx{tool: tool}, func(i int, f *fx) {
		f.at = 30*time.Second + time.Duration(i)*20*time.Second
		f.session = fmt.Sprintf("%s-%d", tool, i)
		if i < len(hits) {
			f.category = hits[i]
		}
	})
}

// faultRateScenario covers MCPToolFaultRate: one tool per failure category
// with 1 call of it in 20 (exactly 5 %), which fires for the categories the
// taxonomy expects a retry to clear, and the rule's other boundaries.
func faultRateScenario() scenario {
	sc := scenario{rule: "MCPToolFaultRate", fire: map[string]float64{}}
	for _, c := range classify.Categories {
		if !c.Failure() {
			continue
		}
		tool := "fault_" + strings.ToLower(string(c))
		sc.calls = append(sc.calls, faultTool(tool, 20, c)...)
		if c.ExpectedRetryable() == classify.RetryYes {
			sc.fire[tool] = 0.05
		}
	}
	sc.calls = concat(sc.calls,
		faultTool("fault_mixed", 40, classify.RateLimited, classify.UpstreamTimeout, classify.Unavailable, classify.Internal), // 10 %
		faultTool("fault_below", 41, classify.Internal, classify.Internal),                                                    // 4.9 %
		faultTool("fault_few", 19, slices.Repeat([]classify.Category{classify.Internal}, 19)...),                              // 19 calls
		// 20 clean calls in the range; the faults came before it.
		faultTool("fault_over", 20),
		repeat(5, fx{tool: "fault_over", category: classify.Internal}, func(i int, f *fx) {
			f.at, f.session = 16*minute+time.Duration(i)*minute, fmt.Sprintf("fault_over-old%d", i)
		}),
		// Re-ingested: each call counts once, as its latest ingest. 1
		// fault in 20 with the 19 successes sent again (1 in 39 rows,
		// under 5 %, if copies counted); 2 successes reclassified as
		// INTERNAL and 3 faults as OK (2 in 20); 5 faults reclassified as
		// OK (none left).
		lastHour(faultTool("fault_replayed", 20, classify.Internal), func(i int, f *fx) {
			if i > 0 {
				f.latest = classify.OK
			}
		}),
		lastHour(faultTool("fault_reclassified", 20, classify.OK, classify.OK, classify.Internal, classify.Internal, classify.Internal), func(i int, f *fx) {
			switch {
			case i < 2:
				f.latest = classify.Internal
			case i < 5:
				f.latest = classify.OK
			}
		}),
		lastHour(faultTool("fault_fixed", 20, slices.Repeat([]classify.Category{classify.Internal}, 5)...), func(i int, f *fx) {
			if i < 5 {
				f.latest = classify.OK
			}
		}),
	)
	sc.fire["fault_mixed"] = 0.1
	sc.fire["fault_replayed"] = 0.05
	sc.fire["fault_reclassified"] = 0.1
	return sc
}

// scenarios covers every alert rule, with the boundaries of each test.
func scenarios() []scenario {
	return []scenario{
		{
			rule: "MCPRetryableNeverRecovers",
			calls: concat(
				chains("upstream_never", 6, 0, classify.UpstreamTimeout, "", true), // 0 of 6 recover
				chains("upstream_edge", 10, 1, classify.UpstreamTimeout, "", true), // exactly 10 %: not below
				chains("upstream_some", 5, 1, classify.UpstreamTimeout, "", true),  // 20 %
				chains("upstream_few", 4, 0, classify.UpstreamTimeout, "", true),   // below 5 chains
				chains("declared_never", 5, 0, classify.NotFound, "yes", false),    // declared retryable, never recovers
			),
			fire: map[string]float64{"upstream_never": 0, "declared_never": 0},
		},
		{
			rule: "MCPNonRetryableRecovers",
			calls: concat(
				chains("lookup_half", 6, 3, classify.NotFound, "", true),     // exactly 50 %: fires
				chains("lookup_less", 5, 2, classify.NotFound, "", true),     // 40 %
				chains("lookup_changed", 6, 6, classify.NotFound, "", false), // recovered by changing arguments
				chains("lookup_few", 4, 4, classify.NotFound, "", true),      // below 5 chains
			),
			fire: map[string]float64{"lookup_half": 0.5},
		},
		{
			rule: "MCPRetriedNonRetryable",
			calls: concat(
				chains("create_same", 5, 0, classify.InvalidArgument, "", true),     // 5 unchanged retries
				chains("create_changed", 5, 0, classify.InvalidArgument, "", false), // corrected, not repeated
				chains("create_few", 4, 0, classify.InvalidArgument, "", true),      // below 5
				chains("timeout_same", 5, 0, classify.UpstreamTimeout, "", true),    // expected retryable
			),
			fire: map[string]float64{"create_same": 5},
		},
		{
			rule: "MCPMisflagged",
			calls: concat(
				misflaggedCalls("flag_wrong", 5, classify.OK, 20*hr),
				misflaggedCalls("flag_few", 4, classify.Internal, 20*hr),
				misflaggedCalls("flag_old", 6, classify.OK, 48*hr)[:3], // all before the 24 h range
				// Re-ingested: each call counts once, as its latest ingest.
				relabel(misflaggedCalls("flag_replayed", 5, classify.OK, 20*hr), classify.OK, true),                   // the same again: 5, not 10
				relabel(misflaggedCalls("flag_fixed", 5, classify.OK, 20*hr), classify.OK, false),                     // no longer misflagged
				relabel(notMisflagged(misflaggedCalls("flag_broke", 5, classify.OK, 20*hr)), classify.Internal, true), // now a hidden failure
			),
			fire: map[string]float64{"flag_wrong": 5, "flag_replayed": 5, "flag_broke": 5},
		},
		{
			rule: "MCPInvalidArgumentSpike",
			calls: concat(
				spikeTool("spiky", classify.InvalidArgument, 100, 2, 20, 3),       // 15 % vs 2 %: 7.5 x
				spikeTool("exact", classify.InvalidArgument, 100, 5, 20, 3),       // 15 % vs 5 %: exactly 3 x
				spikeTool("steady", classify.InvalidArgument, 100, 2, 40, 2),      // 5 % vs 2 %: 2.5 x
				spikeTool("low_volume", classify.InvalidArgument, 0, 0, 19, 5),    // 19 calls
				spikeTool("new_tool", classify.InvalidArgument, 0, 0, 20, 1),      // no baseline, 5 %
				spikeTool("below_floor", classify.InvalidArgument, 100, 0, 40, 1), // 2.5 %, under 5 %
				spikeTool("clean_now", classify.InvalidArgument, 100, 5, 40, 0),   // none in the hour: baseline not read
				// 3 of 20 calls re-ingested as INVALID_ARGUMENT (2 first
				// ingested as INTERNAL), 2 first ingested as INVALID_ARGUMENT
				// re-ingested as OK, some re-ingested unchanged: 15 % vs
				// 2 %, each call counted once, as its latest ingest.
				lastHour(spikeTool("spiky_reingested", classify.InvalidArgument, 100, 2, 20, 0), func(i int, f *fx) {
					switch {
					case i < 2:
						f.category, f.latest = classify.Internal, classify.InvalidArgument
					case i < 3:
						f.latest = classify.InvalidArgument
					case i < 5:
						f.category, f.latest = classify.InvalidArgument, classify.OK
					case i%2 == 0:
						f.latest = classify.OK
					}
				}),
			),
			fire: map[string]float64{"spiky": 7.5, "exact": 3, "new_tool": 1000, "spiky_reingested": 7.5},
		},
		{
			rule: "MCPHiddenFailures",
			calls: concat(
				misflaggedCalls("silent_fail", 10, classify.Internal, hr),
				misflaggedCalls("silent_few", 9, classify.Internal, hr),
				misflaggedCalls("false_alarm", 10, classify.OK, hr),            // successes flagged isError: not hidden
				misflaggedCalls("silent_old", 10, classify.Internal, 3*hr)[:3], // all before the hour
				// Re-ingested: each call counts once, as its latest ingest.
				relabel(misflaggedCalls("silent_replayed", 10, classify.Internal, hr), classify.Internal, true), // 10, not 20
				relabel(misflaggedCalls("silent_fixed", 10, classify.Internal, hr), classify.Internal, false),   // flagged right since
				relabel(misflaggedCalls("silent_success", 10, classify.Internal, hr), classify.OK, true),        // a success now
				relabel(notMisflagged(misflaggedCalls("silent_new", 10, classify.Internal, hr)), classify.Internal, true),
			),
			fire: map[string]float64{"silent_fail": 10, "silent_replayed": 10, "silent_new": 10},
		},
		{
			rule: "MCPRetryLoop",
			calls: concat(
				// 25 calls, identical, every 10 s from 30 minutes ago, all failed.
				chain("loop_same", "loop_same-1", 30*minute, classify.RateLimited, "yes", true, repeatCategory(24, classify.RateLimited)...),
				// 20 calls with changed arguments, the last one a success.
				chain("loop_changed", "loop_changed-1", 40*minute, classify.InvalidArgument, "no", false,
					append(repeatCategory(18, classify.InvalidArgument), classify.OK)...),
				// 19 calls: one short.
				chain("loop_short", "loop_short-1", 30*minute, classify.RateLimited, "yes", true, repeatCategory(18, classify.RateLimited)...),
				// Two sessions of 15 calls: the longest chain is 15, not 30.
				chain("loop_split", "loop_split-1", 30*minute, classify.UpstreamTimeout, "yes", true, repeatCategory(14, classify.UpstreamTimeout)...),
				chain("loop_split", "loop_split-2", 30*minute, classify.UpstreamTimeout, "yes", true, repeatCategory(14, classify.UpstreamTimeout)...),
				// 25 calls from 30 s before the range (read, as the call before
				// a call in range): their chain is not the hour's.
				chain("loop_old", "loop_old-1", 60*minute+30*time.Second, classify.RateLimited, "yes", true, repeatCategory(24, classify.RateLimited)...),
				// 12 calls ingested twice: 12, not 24.
				relabel(chain("loop_replayed", "loop_replayed-1", 30*minute, classify.RateLimited, "yes", true, repeatCategory(11, classify.RateLimited)...), classify.RateLimited, false),
			),
			fire: map[string]float64{"loop_same": 25, "loop_changed": 20},
		},
		{
			rule: "MCPUnchangedRecalls",
			calls: concat(
				recalled("same_again", 20, 10, 0),    // 50 %
				recalled("same_below", 20, 9, 11),    // 45 %
				recalled("changed_again", 20, 0, 20), // corrected every time
				recalled("same_few", 19, 19, 0),      // 19 failures
			),
			fire: map[string]float64{"same_again": 0.5},
		},
		{
			rule: "MCPEmptyResultSpike",
			calls: concat(
				spikeTool("empty_spike", classify.EmptyResult, 100, 10, 20, 6),     // 30 % vs 10 %: 3 x
				spikeTool("empty_steady", classify.EmptyResult, 100, 10, 20, 5),    // 25 % vs 10 %
				spikeTool("empty_new", classify.EmptyResult, 0, 0, 20, 4),          // no baseline, 20 %
				spikeTool("empty_low", classify.EmptyResult, 0, 0, 20, 3),          // 15 %, under 20 %
				spikeTool("empty_clean_now", classify.EmptyResult, 100, 10, 40, 0), // none in the hour: baseline not read
				// 5 failures, 4 empty of the other 20: 20 % vs 10 %, 2 x. A
				// floor that took all 25 calls for the non-failed ones
				// would skip the baseline and report the cap, 1000.
				spikeTool("empty_with_failures", classify.EmptyResult, 100, 10, 20, 4),
				repeat(5, fx{tool: "empty_with_failures", category: classify.Internal}, func(i int, f *fx) {
					f.at, f.session = 55*minute-time.Duration(i)*minute, fmt.Sprintf("empty_with_failures-f%d", i)
				}),
				// 20 calls re-ingested: 6 first INTERNAL as EMPTY_RESULT, 4
				// first EMPTY_RESULT as OK, 10 first INTERNAL as OK: 30 %
				// of 20 non-failed, 3 x.
				lastHour(spikeTool("empty_reingested", classify.EmptyResult, 100, 10, 20, 0), func(i int, f *fx) {
					switch {
					case i < 6:
						f.category, f.latest = classify.Internal, classify.EmptyResult
					case i < 10:
						f.category, f.latest = classify.EmptyResult, classify.OK
					default:
						f.category, f.latest = classify.Internal, classify.OK
					}
				}),
			),
			fire: map[string]float64{"empty_spike": 3, "empty_new": 1000, "empty_reingested": 3},
		},
		{
			rule: "MCPRetryAfterIgnored",
			calls: concat(
				hinted("hint_ignored", 20, 30*time.Second, 10*time.Second, 40*time.Second), // 10 of 20 too soon
				hinted("hint_at", 20, 30*time.Second, 10*time.Second, 30*time.Second,
					40*time.Second, 0, 10*time.Second), // 8 too soon; retried exactly at the hint is not
				hinted("hint_few", 19, 30*time.Second, 10*time.Second), // 19 hinted failures
				hinted("hint_long", 20, 2*minute, 90*time.Second),      // after the 60 s window: not counted
				hinted("hint_none", 20, 0, 10*time.Second),             // no hint
				// Re-ingested unchanged: each call counts once (a copy next
				// to its original is no retry before the hint).
				relabel(hinted("hint_replayed", 20, 30*time.Second, 10*time.Second, 40*time.Second), classify.RateLimited, false),
			),
			fire: map[string]float64{"hint_ignored": 0.5, "hint_replayed": 0.5},
		},
		{
			rule: "MCPUnknownToolCalls",
			calls: concat(
				unknownCalls("search_doc", 10, 0),
				unknownCalls("fetch_v1", 9, 0),     // 9
				unknownCalls("old_lookup", 10, hr), // before the hour
				// Re-ingested: 10 sent twice count 10; 10 reclassified since
				// (the tool was added back) count none.
				relabel(unknownCalls("srch", 10, 0), classify.UnknownTool, false),
				relabel(unknownCalls("lookup_new", 10, 0), classify.OK, false),
			),
			fire: map[string]float64{"search_doc": 10, "srch": 10},
		},
		definitionChangeScenario(),
		faultRateScenario(),
	}
}

// extraCalls complete the panel fixture: a second tenant and server,
// protocol errors with messages, unknown tool names, arguments with empty
// results, a tool whose name needs quoting.
func extraCalls() []fx {
	return concat(
		repeat(12, fx{tenant: "globex", server: "crm", tool: "create_ticket", category: classify.InvalidArgument, code: -32602, message: "invalid params: priority must be one of low, normal, high", args: `{"priority":"urgent"}`}, func(i int, f *fx) {
			f.at = time.Duration(i+1) * 37 * minute
			f.session = fmt.Sprintf("gx-%d", i)
		}),
		repeat(8, fx{tool: "serch_docs", category: classify.UnknownTool, code: -32602, message: "unknown tool: serch_docs"}, func(i int, f *fx) {
			f.at = time.Duration(i+1) * 43 * minute
		}),
		repeat(30, fx{tool: "search_docs", args: `{"department":"finance"}`}, func(i int, f *fx) {
			f.at = time.Duration(i+1) * 17 * minute
			if i%3 == 0 {
				f.args = `{"department":"finace"}`
				f.category = classify.EmptyResult
			}
		}),
		repeat(6, fx{tool: "o'reilly_lookup", args: `{"isbn":"123"}`}, func(i int, f *fx) {
			f.at = time.Duration(i+1)*29*minute + 5*minute
		}),
		repeat(6, fx{tool: "o'reilly_lookup", category: classify.RateLimited, declared: "yes", message: "rate limited, retry in 2s", duration: 1500}, func(i int, f *fx) {
			f.at = time.Duration(i+1) * 29 * minute
		}),
	)
}
