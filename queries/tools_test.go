package queries_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/queries"
)

// Definition hashes of the tool fixture. One is above 2^63, so that UInt64
// scanning is exercised.
const (
	hSearchV1   = uint64(0x1111)
	hSearchV2   = uint64(0xf222000000000002)
	hRefund     = uint64(0x3333)
	hInvoice    = uint64(0x4444)
	hForecastA  = uint64(0x5555)
	hForecastB  = uint64(0x6666)
	hGlobexTool = uint64(0x7777)
)

// toolDef is a stored definition of the fixture; hints are -1 unless set.
func toolDef(tenant, server, tool string, hash uint64, input string, readOnly, idempotent int8) pipeline.ToolDef {
	return pipeline.ToolDef{Tenant: tenant, Server: server, Tool: tool, Hash: hash, Title: tool, Description: "the " + tool + " tool",
		InputSchema: input, ReadOnlyHint: readOnly, DestructiveHint: -1, IdempotentHint: idempotent, OpenWorldHint: -1,
		Definition: `{"name":"` + tool + `"}`, IngestedMs: 1}
}

func sighting(tenant, server, tool string, hash uint64, at time.Duration) pipeline.ToolSighting {
	ts := t0.Add(at)
	return pipeline.ToolSighting{Time: ts, TimeMs: ts.UnixMilli(), Tenant: tenant, Server: server, Tool: tool,
		DefinitionHash: hash, IngestedMs: 1}
}

// toolFixture: kb.search_docs changes from v1 (department a free string) to
// v2 (department an enum) at 10:30, in the middle of the range [10:00,
// 12:00); weather.get_forecast goes A (08:00) → B (09:00) → back to A
// (10:15); payments.refund (no hints: not idempotent) and
// payments.get_invoice (read-only) never change; globex has its own tool.
func toolFixture() pipeline.ToolRows {
	const v1 = `{"properties":{"department":{"type":"string"},"q":{"type":"string"}},"required":["q"],"type":"object"}`
	const v2 = `{"properties":{"department":{"enum":["finance","engineering","hr","sales","legal"],"type":"string"},"q":{"type":"string"}},"required":["department","q"],"type":"object"}`
	return pipeline.ToolRows{
		Definitions: []pipeline.ToolDef{
			toolDef("acme", "kb", "search_docs", hSearchV1, v1, 1, -1),
			toolDef("acme", "kb", "search_docs", hSearchV2, v2, 1, -1),
			toolDef("acme", "payments", "refund", hRefund, `{"type":"object"}`, -1, -1),
			toolDef("acme", "payments", "get_invoice", hInvoice, `{"type":"object"}`, 1, -1),
			toolDef("acme", "weather", "get_forecast", hForecastA, "", -1, 1),
			toolDef("acme", "weather", "get_forecast", hForecastB, "", -1, 0),
			toolDef("globex", "kb", "search_docs", hGlobexTool, "", -1, -1),
		},
		Sightings: []pipeline.ToolSighting{
			sighting("acme", "kb", "search_docs", hSearchV1, -time.Hour),
			sighting("acme", "kb", "search_docs", hSearchV1, -30*time.Minute),
			sighting("acme", "kb", "search_docs", hSearchV2, 30*time.Minute),
			sighting("acme", "kb", "search_docs", hSearchV2, 45*time.Minute),
			sighting("acme", "kb", "search_docs", hSearchV2, 45*time.Minute), // replayed
			sighting("acme", "payments", "refund", hRefund, -2*time.Hour),
			sighting("acme", "payments", "get_invoice", hInvoice, -2*time.Hour),
			sighting("acme", "weather", "get_forecast", hForecastA, -2*time.Hour),
			sighting("acme", "weather", "get_forecast", hForecastB, -time.Hour),
			sighting("acme", "weather", "get_forecast", hForecastA, 15*time.Minute),
			sighting("acme", "kb", "search_docs", hSearchV2, 3*time.Hour), // after the range
			sighting("globex", "kb", "search_docs", hGlobexTool, 0),
		},
	}
}

func ptr(b bool) *bool { return &b }

func TestToolVersionsAndChanges(t *testing.T) {
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	f := queries.Filter{From: t0, To: t0.Add(2 * time.Hour), Tenant: "acme"}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.InsertTools(t, toolFixture())
			ctx := context.Background()
			got, err := queries.ToolVersions(ctx, e.DB, f)
			if err != nil {
				t.Fatal(err)
			}
			var brief []string
			for _, v := range got {
				var in []string
				for _, x := range v.InForceFrom {
					in = append(in, x.Format("15:04"))
				}
				brief = append(brief, fmt.Sprintf("%s/%s v%d %s %s..%s in force %v current=%v idempotent=%v",
					v.Server, v.Tool, v.Version, v.DefinitionHash, v.FirstSeen.Format("15:04"), v.LastSeen.Format("15:04"), in, v.Current, v.Idempotent()))
			}
			want := []string{
				"kb/search_docs v1 0000000000001111 09:00..09:30 in force [09:00] current=false idempotent=true",
				"kb/search_docs v2 f222000000000002 10:30..10:45 in force [10:30] current=true idempotent=true",
				"payments/get_invoice v1 0000000000004444 08:00..08:00 in force [08:00] current=true idempotent=true",
				"payments/refund v1 0000000000003333 08:00..08:00 in force [08:00] current=true idempotent=false",
				"weather/get_forecast v1 0000000000005555 08:00..10:15 in force [08:00 10:15] current=true idempotent=true",
				"weather/get_forecast v2 0000000000006666 09:00..09:00 in force [09:00] current=false idempotent=false",
			}
			if !reflect.DeepEqual(brief, want) {
				t.Errorf("versions\n got %q\nwant %q", brief, want)
			}
			sd := got[1]
			if sd.Title != "search_docs" || sd.ReadOnlyHint == nil || !*sd.ReadOnlyHint || sd.DestructiveHint != nil ||
				string(sd.OutputSchema) != "null" || !json.Valid(sd.InputSchema) {
				t.Errorf("search_docs v2 details: %+v", sd)
			}
			if fc := got[4]; string(fc.InputSchema) != "null" || !reflect.DeepEqual(fc.IdempotentHint, ptr(true)) {
				t.Errorf("get_forecast details: %+v", fc)
			}

			changes, err := queries.DefinitionChanges(ctx, e.DB, f)
			if err != nil {
				t.Fatal(err)
			}
			wantChanges := []queries.DefinitionChange{
				{Tenant: "acme", Server: "kb", Tool: "search_docs", Time: at(30 * time.Minute), Hash: hSearchV2, PreviousHash: hSearchV1},
				{Tenant: "acme", Server: "weather", Tool: "get_forecast", Time: at(15 * time.Minute), Hash: hForecastA, PreviousHash: hForecastB},
			}
			if !reflect.DeepEqual(changes, wantChanges) {
				t.Errorf("changes\n got %+v\nwant %+v", changes, wantChanges)
			}

			// A range that ends before the change: v1 is current, v2 unknown.
			early, err := queries.ToolVersions(ctx, e.DB, queries.Filter{From: t0, To: t0.Add(20 * time.Minute), Tenant: "acme", Tool: "search_docs"})
			if err != nil {
				t.Fatal(err)
			}
			if len(early) != 1 || early[0].Version != 1 || !early[0].Current {
				t.Errorf("before the change: %+v", early)
			}
			// The tenant allow-list of an API token.
			other, err := queries.ToolVersions(ctx, e.DB, queries.Filter{From: t0, To: t0.Add(2 * time.Hour), Tenants: []string{"globex"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(other) != 1 || other[0].Tenant != "globex" {
				t.Errorf("allow-list globex: %+v", other)
			}
		})
	}
}

// violation is a call_violations fixture row; an empty reason marks a
// call whose arguments passed.
func violation(tool string, hash uint64, at time.Duration, callID uint64, side, path, reason, suggestion string, cat classify.Category) pipeline.Violation {
	ts := t0.Add(at)
	v := pipeline.Violation{Time: ts, TimeMs: ts.UnixMilli(), Tenant: "acme", Server: "kb", Tool: tool, CallID: callID,
		DefinitionHash: hash, Side: side, Path: path, Reason: reason, Suggestion: suggestion, Category: string(cat), IngestedMs: 1}
	if reason != "" {
		v.Detail = "detail of " + reason
	}
	if cat.Failure() {
		v.IsFailure = 1
	}
	return v
}

func TestSchemaViolations(t *testing.T) {
	const arg, res = pipeline.SideArguments, pipeline.SideResult
	ok, ia, empty := classify.OK, classify.InvalidArgument, classify.EmptyResult
	vs := []pipeline.Violation{
		// search_docs under v1: three calls pass.
		violation("search_docs", hSearchV1, 5*time.Minute, 1, arg, "", "", "", ok),
		violation("search_docs", hSearchV1, 6*time.Minute, 2, arg, "", "", "", empty),
		violation("search_docs", hSearchV1, 7*time.Minute, 3, arg, "", "", "", ok),
		// under v2: "finace" four times, two refused, two answered empty
		// (accepted bad input); one of them also misses q.
		violation("search_docs", hSearchV2, 31*time.Minute, 4, arg, "department", "not_in_enum", "finance", ia),
		violation("search_docs", hSearchV2, 32*time.Minute, 5, arg, "department", "not_in_enum", "finance", ia),
		violation("search_docs", hSearchV2, 33*time.Minute, 6, arg, "department", "not_in_enum", "finance", empty),
		violation("search_docs", hSearchV2, 34*time.Minute, 7, arg, "department", "not_in_enum", "finance", empty),
		violation("search_docs", hSearchV2, 34*time.Minute, 7, arg, "q", "missing_required", "", empty),
		// "it" is no near miss.
		violation("search_docs", hSearchV2, 35*time.Minute, 8, arg, "department", "not_in_enum", "", ia),
		// a passing call under v2, and one before the range (not counted).
		violation("search_docs", hSearchV2, 36*time.Minute, 9, arg, "", "", "", ok),
		violation("search_docs", hSearchV1, -5*time.Minute, 10, arg, "department", "wrong_type", "", ia),
		// get_invoice: arguments pass, the result breaks its outputSchema.
		violation("get_invoice", hInvoice, 40*time.Minute, 11, arg, "", "", "", ok),
		violation("get_invoice", hInvoice, 40*time.Minute, 11, res, "status", "not_in_enum", "paid", ok),
		violation("get_invoice", hInvoice, 41*time.Minute, 12, arg, "", "", "", ok),
	}
	// Call 4 re-ingested later with the same violation: it counts once.
	replay := violation("search_docs", hSearchV2, 31*time.Minute, 4, arg, "department", "not_in_enum", "finance", ia)
	replay.IngestedMs = 2
	f := queries.Filter{From: t0, To: t0.Add(2 * time.Hour)}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.InsertTools(t, pipeline.ToolRows{Violations: vs})
			e.InsertTools(t, pipeline.ToolRows{Violations: []pipeline.Violation{replay}})
			got, err := queries.SchemaViolations(context.Background(), e.DB, f, queries.SchemaViolationOptions{})
			if err != nil {
				t.Fatal(err)
			}
			h2 := queries.HashString(hSearchV2)
			want := []queries.SchemaViolation{
				{Tool: "search_docs", DefinitionHash: h2, Side: arg, Path: "department", Reason: "not_in_enum", Detail: "detail of not_in_enum",
					Suggestion: "finance", Calls: 4, InvalidArgumentCalls: 2, AcceptedCalls: 2, ValidatedCalls: 9, Share: 4.0 / 9},
				{Tool: "get_invoice", DefinitionHash: queries.HashString(hInvoice), Side: res, Path: "status", Reason: "not_in_enum",
					Detail: "detail of not_in_enum", Suggestion: "paid", Calls: 1, AcceptedCalls: 1, ValidatedCalls: 2, Share: 0.5},
				{Tool: "search_docs", DefinitionHash: h2, Side: arg, Path: "department", Reason: "not_in_enum", Detail: "detail of not_in_enum",
					Calls: 1, InvalidArgumentCalls: 1, ValidatedCalls: 9, Share: 1.0 / 9},
				{Tool: "search_docs", DefinitionHash: h2, Side: arg, Path: "q", Reason: "missing_required", Detail: "detail of missing_required",
					Calls: 1, AcceptedCalls: 1, ValidatedCalls: 9, Share: 1.0 / 9},
			}
			assertRows(t, got, want)
			got, err = queries.SchemaViolations(context.Background(), e.DB, queries.Filter{From: f.From, To: f.To, Tool: "search_docs"},
				queries.SchemaViolationOptions{MinCalls: 2, Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, got, want[:1])
		})
	}
}

// TestSpikesMarkDefinitionChanges: a spike in the bucket of a definition
// change, or in the bucket after it, carries the change's time; a spike
// without a change nearby does not.
func TestSpikesMarkDefinitionChanges(t *testing.T) {
	var fx []call
	n := 0
	add := func(tool string, at time.Duration, count int, cat classify.Category) {
		for i := 0; i < count; i++ {
			n++
			fx = append(fx, call{at: at + time.Duration(i)*time.Second, session: fmt.Sprint("s", n), tool: tool, req: "1", category: cat})
		}
	}
	// search_docs (v2 from 10:30): clean at 09:00, spikes at 10:00 (10 of
	// 20) and 11:00 (19 of 20, against a baseline of 10 of 50).
	add("search_docs", -time.Hour, 30, classify.OK)
	add("search_docs", 0, 10, classify.OK)
	add("search_docs", 40*time.Minute, 10, classify.InvalidArgument)
	add("search_docs", time.Hour, 1, classify.OK)
	add("search_docs", time.Hour+10*time.Minute, 19, classify.InvalidArgument)
	// get_invoice spikes at 10:00 without any change.
	add("get_invoice", -time.Hour, 30, classify.OK)
	add("get_invoice", 0, 10, classify.OK)
	add("get_invoice", 10*time.Minute, 10, classify.InvalidArgument)
	f := queries.Filter{From: t0, To: t0.Add(2 * time.Hour), Tenant: "acme"}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, rows(fx...))
			e.InsertTools(t, toolFixture())
			got, err := queries.InvalidArgumentSpikes(context.Background(), e.DB, f, queries.SpikeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var brief []string
			for _, s := range got {
				changed := "-"
				if s.DefinitionChangedAt != nil {
					changed = s.DefinitionChangedAt.Format("15:04")
				}
				brief = append(brief, s.Tool+" "+s.Time.Format("15:04")+" changed "+changed)
			}
			want := []string{"get_invoice 10:00 changed -", "search_docs 10:00 changed 10:30", "search_docs 11:00 changed 10:30"}
			if !reflect.DeepEqual(brief, want) {
				t.Errorf("got %q, want %q", brief, want)
			}
		})
	}
}

// TestRetriedNonIdempotent: retries after a timeout or no answer count for
// refund (no hints), not for get_invoice (read-only) nor for a tool without
// a known definition (update_ticket).
func TestRetriedNonIdempotent(t *testing.T) {
	ut, ua := classify.UpstreamTimeout, classify.Unavailable
	c := func(server, tool, session, req string, at time.Duration, cat classify.Category) call {
		return call{at: at, server: server, tool: tool, session: session, req: req, category: cat, args: "a"}
	}
	fx := []call{
		// refund: a timeout retried with success; an UNAVAILABLE retried twice in vain.
		c("payments", "refund", "s1", "1", 0, ut),
		c("payments", "refund", "s1", "2", 20*time.Second, classify.OK),
		c("payments", "refund", "s2", "1", 10*time.Minute, ua),
		c("payments", "refund", "s2", "2", 10*time.Minute+30*time.Second, ua),
		c("payments", "refund", "s2", "3", 11*time.Minute, ua),
		// refund: a timeout never retried is no risk.
		c("payments", "refund", "s3", "1", 20*time.Minute, ut),
		// refund: a retried RATE_LIMITED failure is unambiguous: the tool did not run.
		c("payments", "refund", "s4", "1", 30*time.Minute, classify.RateLimited),
		c("payments", "refund", "s4", "2", 30*time.Minute+10*time.Second, classify.OK),
		// get_invoice is read-only; update_ticket has no definition.
		c("payments", "get_invoice", "s5", "1", 0, ut),
		c("payments", "get_invoice", "s5", "2", 10*time.Second, classify.OK),
		c("crm", "update_ticket", "s6", "1", 0, ut),
		c("crm", "update_ticket", "s6", "2", 10*time.Second, classify.OK),
	}
	f := queries.Filter{From: t0, To: t0.Add(time.Hour)}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, rows(fx...))
			e.InsertTools(t, toolFixture())
			all, err := queries.Misclassifications(context.Background(), e.DB, f, time.Minute, 1)
			if err != nil {
				t.Fatal(err)
			}
			var got []queries.Misclassification
			for i, m := range all {
				if i > 0 && (all[i-1].Kind > m.Kind || all[i-1].Kind == m.Kind && all[i-1].Tool > m.Tool) {
					t.Errorf("rows out of order at %d: %+v after %+v", i, m, all[i-1])
				}
				if m.Kind == queries.KindRetriedNonIdempotent {
					got = append(got, m)
				}
			}
			want := []queries.Misclassification{
				{Kind: queries.KindRetriedNonIdempotent, Tool: "refund", Category: "UNAVAILABLE", Chains: 1, Calls: 3, Recovered: 0, Total: 1,
					Evidence: "1 chain retried after a timeout or no answer (2 retries), 0 recovered; the tool declares neither idempotentHint nor readOnlyHint, so a retry may repeat its effect"},
				{Kind: queries.KindRetriedNonIdempotent, Tool: "refund", Category: "UPSTREAM_TIMEOUT", Chains: 1, Calls: 2, Recovered: 1, Total: 1,
					Evidence: "1 chain retried after a timeout or no answer (1 retry), 1 recovered; the tool declares neither idempotentHint nor readOnlyHint, so a retry may repeat its effect"},
			}
			assertRows(t, got, want)
			// A fleet whose tools would not fit in a query's text
			// (max_query_size, 256 KiB by default): 12,000 more tools
			// without hints change nothing.
			var bulk pipeline.ToolRows
			for i := range 12_000 {
				tool := fmt.Sprintf("bulk_tool_with_a_long_descriptive_name_%05d", i)
				bulk.Definitions = append(bulk.Definitions, toolDef("bulk-tenant", "bulk-server", tool, uint64(1e6+i), "", -1, -1))
				bulk.Sightings = append(bulk.Sightings, sighting("bulk-tenant", "bulk-server", tool, uint64(1e6+i), -time.Hour))
			}
			e.InsertTools(t, bulk)
			after, err := queries.Misclassifications(context.Background(), e.DB, f, time.Minute, 1)
			if err != nil {
				t.Fatalf("with 12,000 more tools: %v", err)
			}
			assertRows(t, after, all)
			none, err := queries.Misclassifications(context.Background(), e.DB, f, time.Minute, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range none {
				if m.Kind == queries.KindRetriedNonIdempotent {
					t.Errorf("min_chains 2: %+v", m)
				}
			}
		})
	}
}

// TestToolVersionsOverALongHistory: a tool sighted 30,000 times (hourly for
// three and a half years, or a busy fleet's months) whose definition flips
// every 1,000 sightings. Reading its change points once copied the whole
// history for every sighting (ClickHouse copies an array a lambda captures
// for each element): that query asked 18.16 for 8 GiB and 26.7 for 27 GiB
// here, past both memory limits. The change points must come out, all 29 of
// them, with first and last seen exact.
func TestToolVersionsOverALongHistory(t *testing.T) {
	const n, run = 30_000, 1_000
	start := t0.Add(-n * time.Hour)
	var rows pipeline.ToolRows
	for i := range n {
		rows.Sightings = append(rows.Sightings, sighting("acme", "kb", "search_docs", uint64(1+i/run%2), time.Duration(i-n)*time.Hour))
	}
	f := queries.Filter{From: t0.Add(-time.Hour), To: t0}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.InsertTools(t, rows)
			changes, err := queries.DefinitionChanges(context.Background(), e.DB, queries.Filter{From: start, To: t0})
			if err != nil {
				t.Fatal(err)
			}
			if len(changes) != n/run-1 {
				t.Fatalf("%d definition changes, want %d", len(changes), n/run-1)
			}
			versions, err := queries.ToolVersions(context.Background(), e.DB, f)
			if err != nil {
				t.Fatal(err)
			}
			last := start.Add((n - 1) * time.Hour)
			if len(versions) != 1 || versions[0].LastSeen != last || versions[0].FirstSeen != start.Add(run*time.Hour) ||
				len(versions[0].InForceFrom) != n/run/2 {
				t.Fatalf("versions %+v: want the second, first seen at %s, last at %s, in force %d times", versions, start.Add(run*time.Hour), last, n/run/2)
			}
		})
	}
}

// TestRetriedNonIdempotentFromOldSightings: the version in force is the
// latest sighting before the end of the range however old it is; the last
// two days are searched first. Each tool has a timeout retried with success
// in the range; which ones are reported depends on the version in force:
// old_only (no hints, sighted 10 days before) yes; recent_wins (no hints 10
// days before, read-only an hour before) no; old_latest (read-only 20 days
// before, no hints 10 days before) yes; future (no hints 10 days before,
// read-only after the range) yes; two_old (no hints 30 days before, sighted
// again 9 days before with read-only) no; two_recent (no hints 30 hours
// before, read-only 2 hours before) no, and two_recent_flip (the reverse)
// yes; tie_recent and tie_old (two versions sighted at the same instant)
// take the larger hash's hints: no hints for tie_old only, so yes, and
// tie_recent no.
func TestRetriedNonIdempotentFromOldSightings(t *testing.T) {
	day := 24 * time.Hour
	var tools pipeline.ToolRows
	version := func(tool string, hash uint64, readOnly int8, at ...time.Duration) {
		chtest.AddToolVersion(&tools, "acme", "ops", tool, hash, readOnly, -1, t0.Add(at[0]))
		for _, a := range at[1:] {
			tools.Sightings = append(tools.Sightings, sighting("acme", "ops", tool, hash, a))
		}
	}
	version("old_only", 1, -1, -10*day, -11*day)
	version("recent_wins", 2, -1, -10*day)
	version("recent_wins", 3, 1, -time.Hour)
	version("old_latest", 4, 1, -20*day)
	version("old_latest", 5, -1, -10*day)
	version("future", 6, -1, -10*day)
	version("future", 7, 1, 2*time.Hour)
	version("two_old", 8, -1, -30*day)
	version("two_old", 9, 1, -9*day, -25*day)
	// Two versions in the last two days: the later one is in force.
	version("two_recent", 10, -1, -30*time.Hour)
	version("two_recent", 11, 1, -2*time.Hour)
	version("two_recent_flip", 12, 1, -30*time.Hour)
	version("two_recent_flip", 13, -1, -2*time.Hour)
	// Two versions sighted at the same instant: the larger hash is in
	// force, as tool_changes.sql orders ties.
	version("tie_recent", 14, -1, -3*time.Hour)
	version("tie_recent", 15, 1, -3*time.Hour)
	version("tie_old", 16, 1, -12*day)
	version("tie_old", 17, -1, -12*day)
	var fx []call
	for i, tool := range []string{"old_only", "recent_wins", "old_latest", "future", "two_old", "two_recent", "two_recent_flip", "tie_recent", "tie_old"} {
		s := fmt.Sprintf("s%d", i)
		fx = append(fx,
			call{at: time.Duration(i) * time.Minute, server: "ops", tool: tool, session: s, req: "1", category: classify.UpstreamTimeout, args: "a"},
			call{at: time.Duration(i)*time.Minute + 10*time.Second, server: "ops", tool: tool, session: s, req: "2", category: classify.OK, args: "a"})
	}
	f := queries.Filter{From: t0, To: t0.Add(time.Hour)}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, rows(fx...))
			e.InsertTools(t, tools)
			all, err := queries.Misclassifications(context.Background(), e.DB, f, time.Minute, 1)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range all {
				if m.Kind == queries.KindRetriedNonIdempotent {
					got = append(got, m.Tool)
				}
			}
			if want := []string{"future", "old_latest", "old_only", "tie_old", "two_recent_flip"}; !reflect.DeepEqual(got, want) {
				t.Errorf("retried_non_idempotent for %v, want %v", got, want)
			}
		})
	}
}

// TestToolVersionsTieAtTheSameInstant: two ingest processes sight two
// versions of a tool at the same millisecond, for many tools, and one of
// them again an hour later. The larger hash is in force after the instant
// (the order of tool_changes.sql's arrays, and of misclassifications'
// argMax), whichever order the engine returns the rows in: the rows must
// come back ordered by hash after time, or the version in force is a coin
// toss.
func TestToolVersionsTieAtTheSameInstant(t *testing.T) {
	var tools pipeline.ToolRows
	for i := range 200 {
		tool := fmt.Sprintf("tool%03d", i)
		lo, hi := uint64(2*i+1), uint64(2*i+2)
		tools.Sightings = append(tools.Sightings, sighting("acme", "kb", tool, hi, -2*time.Hour),
			sighting("acme", "kb", tool, lo, -2*time.Hour))
	}
	f := queries.Filter{From: t0.Add(-time.Hour), To: t0}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.InsertTools(t, tools)
			versions, err := queries.ToolVersions(context.Background(), e.DB, f)
			if err != nil {
				t.Fatal(err)
			}
			current := 0
			for _, v := range versions {
				h, err := strconv.ParseUint(v.DefinitionHash, 16, 64)
				if err != nil {
					t.Fatal(err)
				}
				if v.Current != (h%2 == 0) {
					t.Errorf("%s: version %d current=%v, want the larger hash current", v.Tool, h, v.Current)
				}
				if v.Current {
					current++
				}
			}
			if current != 200 {
				t.Errorf("%d tools with a current version, want 200", current)
			}
		})
	}
}
