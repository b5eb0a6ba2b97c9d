package queries_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/queries"
)

// unknownToolsFixture: server kb of acme answers search_docs and
// fetch_doc in [10:00, 12:00) and lists search_docs (09:00, 10:45) and
// export_docs (10:50); it listed fetch_docs at 08:00 only. The names it
// refuses cover every verdict; server bare answers and lists nothing. The
// later ingests of some calls come apart, to be inserted after the rest:
// modern ClickHouse keeps only the latest of a key's copies within one
// insert.
func unknownToolsFixture() (calls, later []pipeline.Call, tools pipeline.ToolRows) {
	const unknown, ok = classify.UnknownTool, classify.OK
	min := func(m int) time.Duration { return time.Duration(m) * time.Minute }
	refused := func(tool, session string, m int) call {
		return call{at: min(m), tool: tool, session: session, req: fmt.Sprint(tool, m), category: unknown, code: -32602}
	}
	answered := func(tool string, m int) call {
		return call{at: min(m), tool: tool, session: "s-ok", req: fmt.Sprint(tool, m), category: ok}
	}
	calls = rows(
		answered("search_docs", 1), answered("search_docs", 2), answered("fetch_doc", 3),
		refused("mcp__kb__search_docs", "s1", 5), refused("mcp__kb__search_docs", "s1", 6), refused("mcp__kb__search_docs", "s2", 7),
		refused("searchDocs", "s3", 8),
		refused("search_doc", "s4", 9), refused("search_doc", "s4", 10),
		refused("fetch_docs", "s5", 20),                                    // listed at 08:00, not since: removed, renamed fetch_doc
		refused("export_docs", "s6", 40), refused("export_docs", "s6", 41), // listed at 10:50: the list and the dispatcher disagree
		refused("get_page", "s7", 10), refused("get_page", "s7", 12), answered("get_page", 30), // another instance answers it
		refused("delete_everything", "s8", 50),
		refused("delete_everything", "s8", -10), // before the range
		refused("stale_widget", "s9", 55),
		refused("reclass_tool", "s10", 56),
		refused("find_page", "s12", 58), // get_page with another verb
		call{at: min(57), server: "bare", tool: "anything", session: "s11", req: "a", category: unknown},
		call{at: min(58), tenant: "globex", tool: "search_docz", session: "g1", req: "g", category: unknown},
	)
	// searchDocs's call sent again unchanged: it counts once.
	again := refused("searchDocs", "s3", 8).row()
	again.IngestedMs = 2
	// reclass_tool: a second call refused first, answered by its later
	// ingest; stale_widget: a call answered first, refused by its later one.
	reclassified := refused("reclass_tool", "s10", 57).row()
	reclassified.Category, reclassified.IngestedMs = string(ok), 2
	refusedFirst := refused("reclass_tool", "s10", 57).row()
	// get_page too: a third call refused first, answered by its later ingest.
	pageLater := refused("get_page", "s7", 14).row()
	pageLater.Category, pageLater.IngestedMs = string(ok), 2
	pageFirst := refused("get_page", "s7", 14).row()
	staleOK := answered("stale_widget", 56).row()
	staleOK.SessionKey, staleOK.SessionID, staleOK.RequestID = "s9", "s9", "stale"
	staleOK.CallID = 77
	staleLater := staleOK
	staleLater.Category, staleLater.IngestedMs = string(unknown), 2
	calls = append(calls, refusedFirst, staleOK, pageFirst)
	later = []pipeline.Call{again, reclassified, staleLater, pageLater}

	s := func(tool string, at time.Duration) pipeline.ToolSighting { return sighting("acme", "kb", tool, 1, at) }
	tools = pipeline.ToolRows{Sightings: []pipeline.ToolSighting{
		s("search_docs", -time.Hour), s("search_docs", 45*time.Minute),
		s("export_docs", 50*time.Minute),
		s("fetch_docs", -2*time.Hour),
		s("later_tool", 3*time.Hour), // after the range: not known in it
	}}
	return calls, later, tools
}

// TestUnknownTools runs GET /api/v1/unknown-tools' query on both engines
// over a fixture with one refused name per verdict, resent and
// reclassified calls and a second tenant.
func TestUnknownTools(t *testing.T) {
	calls, later, tools := unknownToolsFixture()
	f := queries.Filter{From: t0, To: t0.Add(2 * time.Hour), Tenant: "acme"}
	brief := func(us []queries.UnknownTool) []string {
		var out []string
		for _, u := range us {
			s := fmt.Sprintf("%s/%s %d calls %d sessions %s..%s %s %q known %d answered %d",
				u.Server, u.Tool, u.Calls, u.Sessions, u.FirstSeen.Format("15:04"), u.LastSeen.Format("15:04"),
				u.Verdict, u.Suggestion, u.KnownTools, u.AnsweredCalls)
			if u.LastAnswered != nil {
				s += " last answered " + u.LastAnswered.Format("15:04")
			}
			if u.LastListed != nil {
				s += " last listed " + u.LastListed.Format("15:04")
			}
			out = append(out, s)
		}
		return out
	}
	want := []string{
		`kb/mcp__kb__search_docs 3 calls 2 sessions 10:05..10:07 namespaced "search_docs" known 5 answered 0`,
		`kb/export_docs 2 calls 1 sessions 10:40..10:41 listed "" known 4 answered 0 last listed 10:50`,
		`kb/get_page 2 calls 1 sessions 10:10..10:12 answered "" known 4 answered 2 last answered 10:30`,
		`kb/search_doc 2 calls 1 sessions 10:09..10:10 misspelled "search_docs" known 5 answered 0`,
		`kb/stale_widget 2 calls 1 sessions 10:55..10:56 invented "" known 5 answered 0`,
		`bare/anything 1 calls 1 sessions 10:57..10:57 no_known_tools "" known 0 answered 0`,
		`kb/delete_everything 1 calls 1 sessions 10:50..10:50 invented "" known 5 answered 0`,
		`kb/fetch_docs 1 calls 1 sessions 10:20..10:20 removed "fetch_doc" known 5 answered 0 last listed 08:00`,
		`kb/find_page 1 calls 1 sessions 10:58..10:58 reworded "get_page" known 5 answered 0`,
		`kb/reclass_tool 1 calls 1 sessions 10:56..10:56 answered "" known 4 answered 1 last answered 10:57`,
		`kb/searchDocs 1 calls 1 sessions 10:08..10:08 respelled "search_docs" known 5 answered 0`,
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := context.Background()
			// The copies stay unmerged, as between a re-ingest and the
			// next merge: each is read once, the latest deciding.
			e.StopMerges(t)
			e.Insert(t, calls)
			e.Insert(t, later)
			e.InsertTools(t, tools)
			got, err := queries.UnknownTools(ctx, e.DB, f, queries.UnknownToolOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if b := brief(got); !reflect.DeepEqual(b, want) {
				t.Errorf("unknown tools\n got %q\nwant %q", b, want)
			}
			// The limit keeps the most refused names; a name filter one.
			top, err := queries.UnknownTools(ctx, e.DB, f, queries.UnknownToolOptions{Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			if b := brief(top); !reflect.DeepEqual(b, want[:2]) {
				t.Errorf("limit 2\n got %q\nwant %q", b, want[:2])
			}
			one, err := queries.UnknownTools(ctx, e.DB, queries.Filter{From: f.From, To: f.To, Tenant: "acme", Tool: "search_doc"}, queries.UnknownToolOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if b := brief(one); !reflect.DeepEqual(b, want[3:4]) {
				t.Errorf("tool=search_doc\n got %q\nwant %q", b, want[3:4])
			}
			// A token of globex sees globex's name only, judged against
			// globex's tools (none).
			other, err := queries.UnknownTools(ctx, e.DB, queries.Filter{From: f.From, To: f.To, Tenants: []string{"globex"}}, queries.UnknownToolOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(other) != 1 || other[0].Tenant != "globex" || other[0].Tool != "search_docz" || other[0].Verdict != queries.VerdictNoKnownTools {
				t.Errorf("globex: %+v", other)
			}
			// A range with no refused call.
			none, err := queries.UnknownTools(ctx, e.DB, queries.Filter{From: t0.Add(-48 * time.Hour), To: t0.Add(-24 * time.Hour)}, queries.UnknownToolOptions{})
			if err != nil || len(none) != 0 {
				t.Errorf("empty range: %+v, %v", none, err)
			}
		})
	}
}
