package pipeline

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/mcplens/mcplens/pipeline/classify"
)

// toolsListLine is a tools/list capture line of kb with the given tools.
func toolsListLine(at, tools string) string {
	return `{"time":"` + at + `","tenant":"acme","server":"kb","session_id":"s-1","request":{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}},` +
		`"response":{"jsonrpc":"2.0","id":1,"result":{"tools":[` + tools + `]}}}`
}

func searchDocsTool(schema string) string {
	return `{"name":"search_docs","title":"Search documents","description":"Full-text search in one department's documents.","inputSchema":` + schema +
		`,"annotations":{"readOnlyHint":true,"openWorldHint":false}}`
}

func TestDecodeToolsList(t *testing.T) {
	opts := testOptions()
	defs, err := DecodeToolsList([]byte(toolsListLine("2026-11-29T09:05:00Z", searchDocsTool(searchDocsV2)+
		`,{"name":"get_doc","inputSchema":{"type":"object","properties":{"doc_id":{"type":"string"}},"required":["doc_id"]},"_meta":{"x":1}}`)), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) != 2 {
		t.Fatalf("got %d definitions, want 2", len(defs))
	}
	d := defs[0]
	want := ToolDef{Tenant: "acme", Server: "kb", Tool: "search_docs", Hash: d.Hash, Title: "Search documents",
		Description: "Full-text search in one department's documents.", InputSchema: mustCanon(t, searchDocsV2),
		ReadOnlyHint: 1, DestructiveHint: -1, IdempotentHint: -1, OpenWorldHint: 0, Definition: d.Definition,
		SeenMs: 1795943100000, IngestedMs: testNow().UnixMilli()}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("got  %+v\nwant %+v", d, want)
	}
	if !d.Idempotent() || defs[1].Idempotent() {
		t.Errorf("Idempotent: read-only search_docs %v, get_doc without hints %v", d.Idempotent(), defs[1].Idempotent())
	}
	if strings.Contains(defs[1].Definition, "_meta") || defs[1].OutputSchema != "" {
		t.Errorf("get_doc: _meta kept or output schema invented: %+v", defs[1])
	}

	tests := []struct {
		name, line, err string // err "" means ErrSkip
	}{
		{"a tools/call line is not a tool list", `{"time":"2026-11-29T09:00:00Z","request":{"method":"tools/call","id":1,"params":{"name":"a"}}}`, ""},
		{"no response", `{"time":"2026-11-29T09:00:00Z","request":{"method":"tools/list","id":1}}`, ""},
		{"an error response", `{"time":"2026-11-29T09:00:00Z","request":{"method":"tools/list","id":1},"response":{"error":{"code":-32601,"message":"no"}}}`, ""},
		{"an empty page", toolsListLine("2026-11-29T09:00:00Z", ""), ""},
		{"no time", strings.Replace(toolsListLine("x", searchDocsTool(searchDocsV1)), `"time":"x",`, "", 1), `missing "time"`},
		{"a bad time", toolsListLine("yesterday", searchDocsTool(searchDocsV1)), `time: want RFC 3339`},
		{"a tool without a name", toolsListLine("2026-11-29T09:00:00Z", `{"inputSchema":{}}`), "response.result.tools[0]: name: want a non-empty string"},
		{"an input schema that is not a schema", toolsListLine("2026-11-29T09:00:00Z", `{"name":"a","inputSchema":"object"}`), "inputSchema: want a JSON Schema"},
		{"tenant of the wrong type", `{"time":"2026-11-29T09:00:00Z","tenant":5,"request":{"method":"tools/list"},"response":{"result":{"tools":[{"name":"a"}]}}}`, "tenant: want string, got number"},
		{"not JSON", `{"request":{"method":"tools/list"},}`, "tools/list line:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeToolsList([]byte(tt.line), opts)
			switch {
			case tt.err == "" && !errors.Is(err, ErrSkip):
				t.Errorf("got %v, want ErrSkip", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("got %v, want an error containing %q", err, tt.err)
			}
		})
	}

	restricted := &DecodeOptions{Now: testNow, DefaultTenant: "globex", Tenants: []string{"globex"}}
	if _, err := DecodeToolsList([]byte(toolsListLine("2026-11-29T09:00:00Z", searchDocsTool(searchDocsV1))), restricted); err == nil ||
		!strings.Contains(err.Error(), "not allowed for this token") {
		t.Errorf("tenant outside the token: %v", err)
	}
}

func mustCanon(t *testing.T, s string) string {
	t.Helper()
	b, err := canonicalJSON([]byte(s), 64)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDefinitionHash pins what makes a new version: any change to what the
// server announces, but not member order, whitespace, number spelling or
// _meta.
func TestDefinitionHash(t *testing.T) {
	base := `{"name":"search_docs","description":"Search.","inputSchema":{"type":"object","properties":{"limit":{"type":"integer","maximum":50}}}}`
	hash := func(tool string) uint64 {
		t.Helper()
		d, err := parseTool([]byte(tool), 64)
		if err != nil {
			t.Fatal(err)
		}
		return d.Hash
	}
	h := hash(base)
	same := []string{
		`{"inputSchema":{"properties":{"limit":{"maximum":50,"type":"integer"}},"type":"object"},"description":"Search.","name":"search_docs"}`,
		`{ "name": "search_docs", "description": "Search.", "inputSchema": {"type": "object", "properties": {"limit": {"type": "integer", "maximum": 5e1}}} }`,
		`{"name":"search_docs","description":"Search.","inputSchema":{"type":"object","properties":{"limit":{"type":"integer","maximum":50}}},"_meta":{"listedAt":"now"}}`,
	}
	for _, s := range same {
		if hash(s) != h {
			t.Errorf("same definition hashes differently: %s", s)
		}
	}
	differ := []string{
		strings.Replace(base, "Search.", "Search documents.", 1),
		strings.Replace(base, "50", "20", 1),
		strings.Replace(base, `"name":"search_docs"`, `"name":"search_docs","annotations":{"readOnlyHint":true}`, 1),
		strings.Replace(base, `"name":"search_docs"`, `"name":"search_docs","outputSchema":{"type":"object"}`, 1),
	}
	for _, s := range differ {
		if hash(s) == h {
			t.Errorf("changed definition hashes the same: %s", s)
		}
	}
}

func TestParseToolList(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tool := `{"name":"get_forecast","inputSchema":` + getForecast + `}`
	tests := []struct {
		name, body, tenant, server string
		wantTenant, wantServer     string
		wantMs                     int64
		err                        string
	}{
		{"wrapper", `{"tenant":"acme","server":"weather","time":"2026-11-29T10:00:00Z","tools":[` + tool + `]}`, "", "",
			"acme", "weather", 1795946400000, ""},
		{"bare result with the server from the query", `{"tools":[` + tool + `],"nextCursor":"abc"}`, "acme", "weather",
			"acme", "weather", at.UnixMilli(), ""},
		{"a JSON-RPC response", `{"jsonrpc":"2.0","id":2,"result":{"tools":[` + tool + `]}}`, "", "weather",
			"default", "weather", at.UnixMilli(), ""},
		{"the body wins over the query", `{"tenant":"globex","tools":[` + tool + `]}`, "acme", "",
			"globex", "unknown", at.UnixMilli(), ""},
		{"no tools", `{"tools":[]}`, "", "", "", "", 0, "no tools"},
		{"not an object", `[` + tool + `]`, "", "", "", "", 0, "want a JSON object"},
		{"bad time", `{"time":"noon","tools":[` + tool + `]}`, "", "", "", "", 0, "time: want RFC 3339"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defs, err := ParseToolList([]byte(tt.body), tt.tenant, tt.server, at, testOptions())
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, want an error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(defs) != 1 || defs[0].Tenant != tt.wantTenant || defs[0].Server != tt.wantServer || defs[0].SeenMs != tt.wantMs {
				t.Errorf("got %+v, want tenant %s server %s at %d", defs, tt.wantTenant, tt.wantServer, tt.wantMs)
			}
		})
	}
}

// TestCatalogVersionInForce pins the version in force over time: the last
// one seen at or before t, with a change in the middle, a return to the
// old version, and a sighting that arrives out of order. It also pins when
// rows are written: a definition once, a sighting on every change and at
// most once per SightingEvery otherwise.
func TestCatalogVersionInForce(t *testing.T) {
	c := newCatalog(time.Hour, 100)
	const min = int64(60000)
	obs := func(ms int64, hash uint64) [2]bool {
		d := ToolDef{Tenant: "acme", Server: "kb", Tool: "search_docs", Hash: hash, SeenMs: ms}
		def, sighting, ok := c.observe(&d)
		if !ok {
			t.Fatal("not tracked")
		}
		return [2]bool{def, sighting}
	}
	at := func(ms int64) uint64 {
		v, ok := c.at("acme", "kb", "search_docs", ms)
		if !ok {
			return 0
		}
		return v.hash
	}
	steps := []struct {
		name    string
		ms      int64
		hash    uint64
		written [2]bool // definition, sighting
	}{
		{"first sighting of A", 10 * min, 0xA, [2]bool{true, true}},
		{"A again within the hour", 20 * min, 0xA, [2]bool{false, false}},
		{"B replaces A", 30 * min, 0xB, [2]bool{true, true}},
		{"A is back", 40 * min, 0xA, [2]bool{false, true}},
		{"A an hour after its last written sighting", 100 * min, 0xA, [2]bool{false, true}},
		{"B seen before everything (a late capture)", 5 * min, 0xB, [2]bool{false, true}},
	}
	for _, s := range steps {
		if got := obs(s.ms, s.hash); got != s.written {
			t.Errorf("%s: written (definition, sighting) %v, want %v", s.name, got, s.written)
		}
	}
	for _, tt := range []struct {
		ms   int64
		want uint64
	}{{4 * min, 0}, {5 * min, 0xB}, {9 * min, 0xB}, {10 * min, 0xA}, {29 * min, 0xA}, {30 * min, 0xB}, {39 * min, 0xB}, {40 * min, 0xA}, {200 * min, 0xA}} {
		if got := at(tt.ms); got != tt.want {
			t.Errorf("in force at minute %d: %x, want %x", tt.ms/min, got, tt.want)
		}
	}
	if _, ok := c.at("acme", "kb", "get_doc", 40*min); ok {
		t.Error("a tool never listed has a version")
	}
	full := newCatalog(time.Hour, 1)
	a, b := ToolDef{Tenant: "t", Server: "s", Tool: "a", Hash: 1}, ToolDef{Tenant: "t", Server: "s", Tool: "b", Hash: 2}
	if _, _, ok := full.observe(&a); !ok {
		t.Fatal("first tool not tracked")
	}
	if _, _, ok := full.observe(&b); ok {
		t.Error("a tool past MaxTools is tracked")
	}
}

// TestCatalogTiesAtOneInstant pins the catalog's order of two versions
// sighted at the same millisecond to select_tool_changes.sql's: the larger
// hash is in force after the instant, whichever the catalog saw first,
// also when the smaller comes after a sighting of the larger that was
// stored inside its run (FuzzToolCatalog found both: the catalog put the
// one seen last in force, and a restart changed the answer).
func TestCatalogTiesAtOneInstant(t *testing.T) {
	const min = int64(60000)
	type sighting struct {
		ms   int64
		hash uint64
	}
	for _, tc := range []struct {
		name      string
		sightings []sighting
		at        int64
		want      uint64
	}{
		{"the larger first", []sighting{{10 * min, 0xB}, {10 * min, 0xA}}, 10 * min, 0xB},
		{"the smaller first", []sighting{{10 * min, 0xA}, {10 * min, 0xB}}, 10 * min, 0xB},
		{"the smaller at an instant the larger was stored inside its run",
			[]sighting{{1 * min, 0xA}, {5 * min, 0xB}, {70 * min, 0xB}, {70 * min, 0xA}}, 70 * min, 0xB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCatalog(time.Hour, 100)
			for _, s := range tc.sightings {
				d := ToolDef{Tenant: "acme", Server: "kb", Tool: "search_docs", Hash: s.hash, SeenMs: s.ms}
				if _, sighted, _ := c.observe(&d); !sighted {
					t.Fatalf("the sighting of %x at minute %d is not written", s.hash, s.ms/min)
				}
			}
			for _, ms := range []int64{tc.at, tc.at + 1, tc.at + 30*min} {
				var got uint64 // 0: none in force
				if v, ok := c.at("acme", "kb", "search_docs", ms); ok {
					got = v.hash
				}
				if got != tc.want {
					t.Errorf("in force at %d ms: %x, want %x", ms, got, tc.want)
				}
			}
		})
	}
}

func newTestTools() *Tools {
	return NewTools(nil, nil, ToolsConfig{}, prometheus.NewRegistry(), quietLog())
}

// violationView is what the processor tests compare of a Violation.
type violationView struct {
	Tool, Side, Path, Reason, Suggestion, Category string
	Hash                                           uint64
}

func pendingViolations(tl *Tools) []violationView {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []violationView
	for _, v := range tl.pending.Violations {
		out = append(out, violationView{v.Tool, v.Side, v.Path, v.Reason, v.Suggestion, v.Category, v.DefinitionHash})
	}
	return out
}

// TestProcessorCapturesDefinitionsAndValidates runs the seed article's
// story through ReadNDJSON: a call before any definition (not validated),
// the first definition (department is a free string), a call that passes
// it, a new definition with the department enum, then the same misspelled
// call, which the server answered with an empty result (accepted bad
// input), and one the server refused.
func TestProcessorCapturesDefinitionsAndValidates(t *testing.T) {
	tl := newTestTools()
	p := &Processor{Classifier: classify.Default(), Decode: DecodeOptions{Now: testNow}, Tools: tl}
	call := func(at, id, args, response string) string {
		return `{"time":"` + at + `","tenant":"acme","server":"kb","session_id":"s-1","request":{"jsonrpc":"2.0","id":` + id +
			`,"method":"tools/call","params":{"name":"search_docs","arguments":` + args + `}},"response":{"jsonrpc":"2.0","id":` + id + `,` + response + `}}`
	}
	empty := `"result":{"content":[{"type":"text","text":"No documents found"}],"isError":false}`
	refused := `"error":{"code":-32602,"message":"Invalid params: department must be one of finance, engineering, hr, sales, legal"}`
	body := strings.Join([]string{
		call("2026-11-29T09:00:00Z", "1", `{"department":"finace","q":"travel"}`, empty),
		toolsListLine("2026-11-29T09:05:00Z", searchDocsTool(searchDocsV1)),
		call("2026-11-29T09:10:00Z", "2", `{"department":"finace","q":"travel"}`, empty),
		toolsListLine("2026-11-29T10:00:00Z", searchDocsTool(searchDocsV2)),
		call("2026-11-29T10:05:00Z", "3", `{"department":"finace","q":"travel"}`, empty),
		call("2026-11-29T10:06:00Z", "4", `{"department":"finace","q":"travel"}`, refused),
		`{"time":"2026-11-29T10:07:00Z","request":{"method":"tools/list","id":9},"response":{"result":{"tools":[{"inputSchema":{}}]}}}`,
	}, "\n")
	var calls []Call
	var dead []DeadLetter
	res, err := p.ReadNDJSON(strings.NewReader(body), "default", testNow(), func(c Call) { calls = append(calls, c) },
		func(d DeadLetter) { dead = append(dead, d) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 4 || res.ToolLists != 2 || res.Rejected != 1 || len(dead) != 1 ||
		!strings.Contains(res.Errors[0].Reason, "name: want a non-empty string") {
		t.Fatalf("result %+v", res)
	}
	v2, _ := parseTool([]byte(searchDocsTool(searchDocsV2)), 64)
	want := []violationView{
		{"search_docs", SideArguments, "department", ReasonNotInEnum, "finance", "EMPTY_RESULT", v2.Hash},
		{"search_docs", SideArguments, "department", ReasonNotInEnum, "finance", "INVALID_ARGUMENT", v2.Hash},
	}
	if got := pendingViolations(tl); !reflect.DeepEqual(got, want) {
		t.Errorf("violations\n got %+v\nwant %+v", got, want)
	}
	// The call before the first definition is not validated; the one that
	// passed v1 and the two that failed v2 are, and write no row for it.
	var flags []uint8
	for _, c := range calls {
		flags = append(flags, c.ArgsValidated)
	}
	if want := []uint8{0, 1, 1, 1}; !slices.Equal(flags, want) {
		t.Errorf("args_validated %v, want %v", flags, want)
	}
	tl.mu.Lock()
	defs, sightings := len(tl.pending.Definitions), len(tl.pending.Sightings)
	tl.mu.Unlock()
	if defs != 2 || sightings != 2 {
		t.Errorf("queued %d definitions and %d sightings, want 2 and 2", defs, sightings)
	}

	// Without Tools, tools/list lines are skipped as before.
	plain := &Processor{Classifier: classify.Default(), Decode: DecodeOptions{Now: testNow}}
	res, err = plain.ReadNDJSON(strings.NewReader(body), "default", testNow(), func(Call) {}, func(DeadLetter) {})
	if err != nil || res.Skipped != 3 || res.ToolLists != 0 || res.Accepted != 4 {
		t.Errorf("without Tools: %+v %v", res, err)
	}
}

// TestCheckResults validates structuredContent against the outputSchema:
// a conforming result, a non-conforming one, a result without
// structuredContent, and results that are not checked (errors, isError).
func TestCheckResults(t *testing.T) {
	tl := newTestTools()
	p := &Processor{Classifier: classify.Default(), Decode: DecodeOptions{Now: testNow}, Tools: tl}
	tool := `{"name":"lookup_customer","inputSchema":{"type":"object","properties":{"customer_id":{"type":"string"}},"required":["customer_id"]},` +
		`"outputSchema":{"type":"object","properties":{"id":{"type":"string"},"tier":{"type":"string","enum":["free","pro","enterprise"]},"open_tickets":{"type":"integer","minimum":0}},"required":["id","tier"]}}`
	line := func(id, response string) string {
		return `{"time":"2026-11-29T10:0` + id + `:00Z","tenant":"acme","server":"crm","request":{"jsonrpc":"2.0","id":` + id +
			`,"method":"tools/call","params":{"name":"lookup_customer","arguments":{"customer_id":"C-1"}}},"response":{"jsonrpc":"2.0","id":` + id + `,` + response + `}}`
	}
	body := strings.Join([]string{
		`{"time":"2026-11-29T09:00:00Z","tenant":"acme","server":"crm","request":{"method":"tools/list","id":0},"response":{"result":{"tools":[` + tool + `]}}}`,
		line("1", `"result":{"content":[{"type":"text","text":"{}"}],"structuredContent":{"id":"C-1","tier":"pro","open_tickets":2}}`),
		line("2", `"result":{"content":[{"type":"text","text":"{}"}],"structuredContent":{"id":"C-1","tier":"gold","open_tickets":-1}}`),
		line("3", `"result":{"content":[{"type":"text","text":"C-1 is a pro customer"}]}`),
		line("4", `"result":{"content":[{"type":"text","text":"CRM down"}],"isError":true}`),
		line("5", `"error":{"code":-32603,"message":"internal"}`),
	}, "\n")
	var flags []uint8
	if _, err := p.ReadNDJSON(strings.NewReader(body), "default", testNow(), func(c Call) { flags = append(flags, c.ArgsValidated) },
		func(DeadLetter) {}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range pendingViolations(tl) {
		got = append(got, v.Side+" "+v.Path+" "+v.Reason)
	}
	want := []string{
		// call 1: arguments and result pass; no row
		"result open_tickets out_of_range", "result tier not_in_enum",
		"result $ missing_structured_content",
		// call 4 (isError: the result is not checked) and 5 (JSON-RPC error:
		// no result): arguments pass, no row
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// Every call's arguments were validated, whatever its result.
	if want := []uint8{1, 1, 1, 1, 1}; !slices.Equal(flags, want) {
		t.Errorf("args_validated %v, want %v", flags, want)
	}
}

func TestToolsIngestHTTP(t *testing.T) {
	tl := newTestTools()
	p := &Processor{Classifier: classify.Default(), Decode: DecodeOptions{Now: testNow, DefaultTenant: "acme", Tenants: []string{"acme"}}, Tools: tl}
	h := NewToolsIngest(p, NewMetrics(prometheus.NewRegistry()), HTTPConfig{MaxBodyBytes: 1 << 16}, quietLog())
	h.now = testNow
	tests := []struct {
		name, url, body string
		status          int
		want            string
	}{
		{"bare result", "/v1/tools?server=kb", `{"tools":[` + searchDocsTool(searchDocsV2) + `]}`, 200, `{"tools":1}`},
		{"wrapper with time", "/v1/tools", `{"server":"kb","time":"2026-11-29T09:00:00Z","tools":[` + searchDocsTool(searchDocsV1) + `]}`, 200, `{"tools":1}`},
		{"another tenant than the token's", "/v1/tools?tenant=globex", `{"tools":[` + searchDocsTool(searchDocsV1) + `]}`, 400, "not allowed for this token"},
		{"empty list", "/v1/tools", `{"tools":[]}`, 400, "no tools"},
		{"too large", "/v1/tools", `{"tools":[` + strings.Repeat(" ", 1<<16) + `]}`, 413, "raise -max-body-bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, tt.url, bytes.NewReader([]byte(tt.body)))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.want) {
				t.Errorf("got %d %s, want %d containing %s", rec.Code, rec.Body, tt.status, tt.want)
			}
		})
	}
	if v, ok := tl.cat.at("acme", "kb", "search_docs", testNow().UnixMilli()); !ok || v.input != mustCanon(t, searchDocsV2) {
		t.Errorf("the definition posted last (seen now) is not in force: %v %v", v, ok)
	}
	if v, ok := tl.cat.at("acme", "kb", "search_docs", 1795942800000+1); !ok || v.input != mustCanon(t, searchDocsV1) {
		t.Errorf("the definition posted with its time is not in force at that time: %v %v", v, ok)
	}
}

// TestOTLPToolsList captures the definitions of a Logfire tools/list span
// and validates a later tools/call span against them; a semconv span
// without arguments is not validated.
func TestOTLPToolsList(t *testing.T) {
	tl := newTestTools()
	p := testProcessor()
	p.Tools = tl
	result := `{"tools":[` + searchDocsTool(searchDocsV2) + `]}`
	td := tracesOf(
		testSpan{name: "MCP request: tools/list", span: 1, startMs: 0, durMs: 5, attrs: map[string]any{
			"rpc.method": "tools/list", "mcp.server.name": "kb", "request": `{"method":"tools/list","params":{}}`, "response": result},
			res: map[string]any{"service.name": "agent", "mcplens.tenant": "acme"}},
		testSpan{name: "MCP request: tools/call search_docs", span: 2, startMs: 1000, durMs: 50, attrs: map[string]any{
			"rpc.method": "tools/call", "mcp.server.name": "kb",
			"request":  `{"method":"tools/call","params":{"name":"search_docs","arguments":{"department":"finace","q":"travel"}}}`,
			"response": `{"content":[{"type":"text","text":"No documents found"}],"isError":false}`},
			res: map[string]any{"service.name": "agent", "mcplens.tenant": "acme"}},
		testSpan{name: "tools/call search_docs", kind: ptrace.SpanKindServer, trace: 2, span: 3, startMs: 2000, durMs: 50,
			attrs: map[string]any{"mcp.method.name": "tools/call", "gen_ai.tool.name": "search_docs"}},
	)
	calls, _, rejected, msg := p.Traces(td, OTLPConfig{}, testNow())
	if rejected != 0 || len(calls) != 2 {
		t.Fatalf("%d calls, %d rejected: %s", len(calls), rejected, msg)
	}
	got := pendingViolations(tl)
	if len(got) != 1 || got[0].Path != "department" || got[0].Suggestion != "finance" {
		t.Errorf("violations %+v, want one for department (the semconv call has no arguments to check)", got)
	}
}

// TestUncompilableSchemaIsNotValidated: a definition whose inputSchema
// cannot be compiled (an external $ref) leaves its calls unvalidated,
// counted as schema_error, instead of failing them all.
func TestUncompilableSchemaIsNotValidated(t *testing.T) {
	reg := prometheus.NewRegistry()
	tl := NewTools(nil, nil, ToolsConfig{}, reg, quietLog())
	p := &Processor{Classifier: classify.Default(), Decode: DecodeOptions{Now: testNow}, Tools: tl}
	body := toolsListLine("2026-11-29T09:00:00Z", `{"name":"search_docs","inputSchema":{"$ref":"https://schemas.example.com/search.json"}}`) + "\n" +
		`{"time":"2026-11-29T10:00:00Z","tenant":"acme","server":"kb","request":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_docs","arguments":{"q":1}}},"response":{"jsonrpc":"2.0","id":1,"result":{"content":[]}}}`
	res, err := p.ReadNDJSON(strings.NewReader(body), "default", testNow(), func(Call) {}, func(DeadLetter) {})
	if err != nil || res.Accepted != 1 || res.ToolLists != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	if got := pendingViolations(tl); len(got) != 0 {
		t.Errorf("violations %+v, want none", got)
	}
	if n := testutil.ToFloat64(tl.m.validations.WithLabelValues(SideArguments, "schema_error")); n != 1 {
		t.Errorf("schema_error count %v, want 1", n)
	}
}
