package pipeline

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/mcplens/mcplens/pipeline/classify"
)

// otlpRig is an OTLP receiver over an in-memory inserter, with a clock the
// test moves.
type otlpRig struct {
	o   *OTLP
	b   *Batcher
	ins *memInserter
	m   *Metrics
	reg *prometheus.Registry
	now time.Time
}

func newOTLPRig(t *testing.T, cfg OTLPConfig, capacity int) *otlpRig {
	t.Helper()
	r := &otlpRig{ins: &memInserter{}, reg: prometheus.NewRegistry(), now: testNow()}
	r.m = NewMetrics(r.reg)
	r.b = NewBatcher(r.ins, BatchConfig{BatchSize: 1, QueueCapacity: capacity, FlushEvery: time.Hour}, r.m, quietLog())
	p := &Processor{Classifier: classify.Default(), Decode: DecodeOptions{Now: testNow}}
	r.o = NewOTLP(p, r.b, r.m, HTTPConfig{MaxBodyBytes: 1 << 20, MaxDecompressedBytes: 4 << 20}, cfg, quietLog())
	r.o.now = func() time.Time { return r.now }
	return r
}

// post sends body to the HTTP handler.
func (r *otlpRig) post(t *testing.T, body []byte, headers map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/traces", bytes.NewReader(body))
	req.Header.Set("Content-Type", otlpJSON)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	r.o.ServeHTTP(rec, req)
	return rec
}

// drain inserts everything queued and returns the calls inserted so far.
func (r *otlpRig) drain(t *testing.T) []Call {
	t.Helper()
	if err := r.b.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	r.ins.mu.Lock()
	defer r.ins.mu.Unlock()
	return append([]Call(nil), r.ins.calls...)
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "otlp", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// protoOf converts an OTLP JSON body to protobuf with pdata's marshalers.
func protoOf(t testing.TB, jsonBody []byte) []byte {
	t.Helper()
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalJSON(jsonBody); err != nil {
		t.Fatal(err)
	}
	b, err := req.MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fixtureNames(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "otlp", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		if !strings.HasSuffix(p, ".golden.json") {
			names = append(names, strings.TrimSuffix(filepath.Base(p), ".json"))
		}
	}
	if len(names) == 0 {
		t.Fatal("no fixtures in testdata/otlp")
	}
	return names
}

// otlpGolden is what a fixture decodes to through the HTTP receiver.
type otlpGolden struct {
	Response json.RawMessage
	Calls    []Call
	Dead     []LineError
}

// TestOTLPGolden posts each dialect's fixture to the receiver, as JSON and
// as protobuf (made from the JSON with pdata), and compares the calls with
// testdata/otlp/NAME.golden.json.
func TestOTLPGolden(t *testing.T) {
	for _, name := range fixtureNames(t) {
		t.Run(name, func(t *testing.T) {
			body := readFixture(t, name+".json")
			var got [2]otlpGolden
			for i, enc := range []string{otlpJSON, otlpProtobuf} {
				r := newOTLPRig(t, OTLPConfig{}, 1000)
				b := body
				if enc == otlpProtobuf {
					b = protoOf(t, body)
				}
				rec := r.post(t, b, map[string]string{"Content-Type": enc})
				if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != enc {
					t.Fatalf("%s: %d %s %q", enc, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
				}
				resp := ptraceotlp.NewExportResponse()
				var err error
				if enc == otlpProtobuf {
					err = resp.UnmarshalProto(rec.Body.Bytes())
				} else {
					err = resp.UnmarshalJSON(rec.Body.Bytes())
				}
				if err != nil {
					t.Fatalf("%s response: %v", enc, err)
				}
				js, _ := resp.MarshalJSON()
				got[i].Response = js
				got[i].Calls = r.drain(t)
				for _, d := range r.ins.dead {
					got[i].Dead = append(got[i].Dead, LineError{Line: int(d.Line), Reason: d.Reason})
				}
			}
			if !reflect.DeepEqual(got[0], got[1]) {
				t.Fatalf("protobuf and JSON bodies decode differently:\njson  %+v\nproto %+v", got[0], got[1])
			}
			b, err := json.MarshalIndent(got[0], "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, '\n')
			path := filepath.Join("testdata", "otlp", name+".golden.json")
			if updateGolden() {
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v; run go test ./pipeline -run TestOTLPGolden -update", err)
			}
			if !bytes.Equal(b, want) {
				t.Errorf("%s is stale; run `go test ./pipeline -run TestOTLPGolden -update` and review the diff", path)
			}
		})
	}
}

// testSpan describes one span for tracesOf.
type testSpan struct {
	name    string
	kind    ptrace.SpanKind
	trace   byte // trace id: 16 bytes of this value; 0 is the default 1
	span    byte
	parent  byte
	startMs int64 // from 2026-11-29T10:00:00Z
	durMs   int64
	attrs   map[string]any
	status  ptrace.StatusCode
	msg     string
	res     map[string]any // resource attributes; service.name "kb" and tenant "acme" when nil
	scope   string
}

const otlpBaseMs = 1795946400000 // 2026-11-29T10:00:00Z

func tracesOf(spans ...testSpan) ptrace.Traces {
	td := ptrace.NewTraces()
	for _, s := range spans {
		rs := td.ResourceSpans().AppendEmpty()
		res := s.res
		if res == nil {
			res = map[string]any{"service.name": "kb", "mcplens.tenant": "acme"}
		}
		_ = rs.Resource().Attributes().FromRaw(res)
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName(s.scope)
		sp := ss.Spans().AppendEmpty()
		sp.SetName(s.name)
		sp.SetKind(s.kind)
		tr := s.trace
		if tr == 0 {
			tr = 1
		}
		var tid pcommon.TraceID
		for i := range tid {
			tid[i] = tr
		}
		sp.SetTraceID(tid)
		sp.SetSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, 0, s.span + 1})
		if s.parent != 0 {
			sp.SetParentSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, 0, s.parent + 1})
		}
		start := (otlpBaseMs + s.startMs) * 1e6
		sp.SetStartTimestamp(pcommon.Timestamp(start))
		sp.SetEndTimestamp(pcommon.Timestamp(start + s.durMs*1e6))
		_ = sp.Attributes().FromRaw(s.attrs)
		sp.Status().SetCode(s.status)
		sp.Status().SetMessage(s.msg)
	}
	return td
}

// callView is the part of a Call that the lookup table checks.
type callView struct {
	Tool, RequestID, Side, SessionKey string
	HasResponse                       uint8
	IsError                           int8
	RPCCode                           int64
	Category                          string
}

func viewCall(c Call) callView {
	return callView{Tool: c.Tool, RequestID: c.RequestID, Side: c.Side, SessionKey: c.SessionKey,
		HasResponse: c.HasResponse, IsError: c.IsError, RPCCode: c.RPCCode, Category: c.Category}
}

func testProcessor() *Processor {
	return &Processor{Classifier: classify.Default(), Decode: DecodeOptions{Now: testNow}}
}

// TestOTLPLookups pins the lookup orders and value rules of
// docs/otel.md, one span per row. A zero want means the span is skipped.
func TestOTLPLookups(t *testing.T) {
	tc := "tools/call"
	for _, tt := range []struct {
		name string
		span testSpan
		want callView
	}{
		{"mcp.method.name beats the span name",
			testSpan{name: "tools/list", kind: ptrace.SpanKindServer, attrs: map[string]any{"mcp.method.name": tc, "gen_ai.tool.name": "a"}},
			callView{Tool: "a", Side: "server", SessionKey: "01010101010101010101010101010101", HasResponse: 1, IsError: -1, Category: "OK"}},
		{"a method other than tools/call is skipped",
			testSpan{name: "tools/call a", attrs: map[string]any{"mcp.method.name": "tools/list"}}, callView{}},
		{"mcp.event_type without its mcp: prefix",
			testSpan{name: "x", kind: ptrace.SpanKindServer, attrs: map[string]any{"mcp.event_type": "mcp:tools/call", "mcp.resource_name": "b"}, status: ptrace.StatusCodeOk},
			callView{Tool: "b", Side: "server", SessionKey: "01010101010101010101010101010101", HasResponse: 1, IsError: 0, Category: "OK"}},
		{"the span name gives method and tool last",
			testSpan{name: "MCP send tools/call c", kind: ptrace.SpanKindClient, attrs: map[string]any{"jsonrpc.request.id": "4"}},
			callView{Tool: "c", RequestID: "4", Side: "client", SessionKey: "01010101010101010101010101010101", HasResponse: 1, IsError: -1, Category: "OK"}},
		{"gen_ai.tool.name before mcp.tool.name",
			testSpan{name: "tools/call x", attrs: map[string]any{"mcp.method.name": tc, "gen_ai.tool.name": "semconv", "mcp.tool.name": "sentry"}},
			callView{Tool: "semconv", SessionKey: "01010101010101010101010101010101", HasResponse: 1, IsError: -1, Category: "OK"}},
		{"jsonrpc.request.id before mcp.request.id, an int as its decimal form",
			testSpan{name: "tools/call a", attrs: map[string]any{"jsonrpc.request.id": 7, "mcp.request.id": "other"}},
			callView{Tool: "a", RequestID: "7", SessionKey: "01010101010101010101010101010101", HasResponse: 1, IsError: -1, Category: "OK"}},
		{"session id, then conversation id, then trace id",
			testSpan{name: "tools/call a", attrs: map[string]any{"gen_ai.conversation.id": "conv"}},
			callView{Tool: "a", SessionKey: "conv", HasResponse: 1, IsError: -1, Category: "OK"}},
		{"rpc.status_code before rpc.response.status_code",
			testSpan{name: "tools/call a", attrs: map[string]any{"rpc.status_code": "-32601", "rpc.response.status_code": "-32602"}},
			callView{Tool: "a", SessionKey: "01010101010101010101010101010101", HasResponse: 1, IsError: -1, RPCCode: -32601, Category: "INTERNAL"}},
		{"a numeric error.type is the code",
			testSpan{name: "tools/call a", attrs: map[string]any{"error.type": "-32602"}, status: ptrace.StatusCodeError, msg: "Unknown tool: a"},
			callView{Tool: "a", SessionKey: "01010101010101010101010101010101", HasResponse: 1, IsError: -1, RPCCode: -32602, Category: "UNKNOWN_TOOL"}},
		{"rpc.jsonrpc.error_code as a string (mcp-go sends strings)",
			testSpan{name: "tools/call a", attrs: map[string]any{"rpc.jsonrpc.error_code": " -32602 "}},
			callView{Tool: "a", SessionKey: "01010101010101010101010101010101", HasResponse: 1, IsError: -1, RPCCode: -32602, Category: "INVALID_ARGUMENT"}},
		{"span status ERROR alone is not a failure",
			testSpan{name: "tools/call a", kind: ptrace.SpanKindServer, attrs: map[string]any{"mcp.method.name": tc}, status: ptrace.StatusCodeError, msg: "boom"},
			callView{Tool: "a", Side: "server", SessionKey: "01010101010101010101010101010101", HasResponse: 1, IsError: -1, Category: "OK"}},
		{"error.type tool_error is an isError result",
			testSpan{name: "tools/call a", attrs: map[string]any{"error.type": "tool_error"}, status: ptrace.StatusCodeError, msg: "Rate limit exceeded"},
			callView{Tool: "a", SessionKey: "01010101010101010101010101010101", HasResponse: 1, IsError: 1, Category: "RATE_LIMITED"}},
		{"mcp.tool.result.is_error as the string true",
			testSpan{name: "tools/call a", attrs: map[string]any{"mcp.tool.result.is_error": "true"}},
			callView{Tool: "a", SessionKey: "01010101010101010101010101010101", HasResponse: 1, IsError: 1, Category: "UNCLASSIFIED"}},
		{"a timeout on the client never reached the wire",
			testSpan{name: "tools/call a", kind: ptrace.SpanKindClient, attrs: map[string]any{"error.type": "timeout"}},
			callView{Tool: "a", Side: "client", SessionKey: "01010101010101010101010101010101", IsError: -1, Category: "UNAVAILABLE"}},
		{"an exception type on the server is a failed handler",
			testSpan{name: "tools/call a", kind: ptrace.SpanKindServer, attrs: map[string]any{"error.type": "PermissionError"}, msg: "access denied"},
			callView{Tool: "a", Side: "server", SessionKey: "01010101010101010101010101010101", HasResponse: 1, IsError: 1, Category: "PERMISSION_DENIED"}},
		{"a TypeScript McpError on the client carries its code in the message",
			testSpan{name: "tools/call a", kind: ptrace.SpanKindClient, attrs: map[string]any{"error.type": "McpError"}, msg: "MCP error -32602: Tool a not found"},
			callView{Tool: "a", Side: "client", SessionKey: "01010101010101010101010101010101", HasResponse: 1, IsError: -1, RPCCode: -32602, Category: "UNKNOWN_TOOL"}},
		{"execute_tool with MCP attributes is a tools/call",
			testSpan{name: "execute_tool d", attrs: map[string]any{"gen_ai.operation.name": "execute_tool", "mcp.session.id": "s"}},
			callView{Tool: "d", Side: "client", SessionKey: "s", HasResponse: 1, IsError: -1, Category: "OK"}},
		{"execute_tool without MCP attributes is some other tool",
			testSpan{name: "execute_tool d", attrs: map[string]any{"gen_ai.operation.name": "execute_tool"}}, callView{}},
		{"OpenLLMetry's MCP tool span",
			testSpan{name: "e.tool", scope: "opentelemetry.instrumentation.mcp.instrumentation", attrs: map[string]any{"traceloop.span.kind": "tool"}, status: ptrace.StatusCodeOk},
			callView{Tool: "e", Side: "client", SessionKey: "01010101010101010101010101010101", HasResponse: 1, IsError: -1, Category: "OK"}},
		{"a Traceloop tool span from another scope is not MCP",
			testSpan{name: "e.tool", scope: "traceloop.tracer", attrs: map[string]any{"traceloop.span.kind": "tool"}}, callView{}},
		{"mcp-go's status text is its isError",
			testSpan{name: "mcp.tools/call", kind: ptrace.SpanKindServer, attrs: map[string]any{"mcp.method": tc, "mcp.tool.name": "f"}, status: ptrace.StatusCodeError, msg: "tool returned error result"},
			callView{Tool: "f", Side: "server", SessionKey: "01010101010101010101010101010101", HasResponse: 1, IsError: 1, Category: "UNCLASSIFIED"}},
		{"MCPcat's synthetic get_more_tools is skipped",
			testSpan{name: "mcp:tools/call", scope: "mcpcat", attrs: map[string]any{"mcp.event_type": "mcp:tools/call", "mcp.resource_name": "get_more_tools"}}, callView{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls, _, rejected, msg := testProcessor().Traces(tracesOf(tt.span), OTLPConfig{}, testNow())
			if rejected != 0 {
				t.Fatalf("rejected: %s", msg)
			}
			var got callView
			if len(calls) > 1 {
				t.Fatalf("%d calls from one span", len(calls))
			}
			if len(calls) == 1 {
				got = viewCall(calls[0])
			}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestOTLPCaptureAndSpanShareTheCallID: the same call seen as a capture
// line and as a server span gets one identity, so the two rows collapse.
func TestOTLPCaptureAndSpanShareTheCallID(t *testing.T) {
	line := `{"time":"2026-11-29T10:00:01.000Z","duration_ms":12,"tenant":"acme","server":"kb","session_id":"s1","request":{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_docs","arguments":{"q":"x"}}},"response":{"jsonrpc":"2.0","id":7,"result":{"content":[]}}}`
	capt, err := testProcessor().Line([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	calls, _, _, _ := testProcessor().Traces(tracesOf(testSpan{name: "tools/call search_docs", kind: ptrace.SpanKindServer, startMs: 1000, durMs: 12,
		attrs: map[string]any{"mcp.method.name": "tools/call", "jsonrpc.request.id": "7", "mcp.session.id": "s1",
			"gen_ai.tool.call.arguments": map[string]any{"q": "x"}, "gen_ai.tool.call.result": `{"content":[]}`}}), OTLPConfig{}, testNow())
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	span := calls[0]
	if span.CallID != capt.CallID || span.TimeMs != capt.TimeMs || span.SessionKey != capt.SessionKey || span.Tenant != capt.Tenant ||
		span.Server != capt.Server || span.Tool != capt.Tool || span.ArgsHash != capt.ArgsHash || span.Category != capt.Category {
		t.Errorf("span and capture differ:\nspan    %+v\ncapture %+v", span, capt)
	}
}

// pairSpans are the two sides of one call: the server span's parent is
// the client span. The server starts 40 ms after the client.
var (
	clientSide = testSpan{name: "tools/call search_docs", kind: ptrace.SpanKindClient, trace: 9, span: 1, startMs: 5000, durMs: 420,
		res: map[string]any{"service.name": "agent", "mcplens.tenant": "acme"},
		attrs: map[string]any{"mcp.method.name": "tools/call", "jsonrpc.request.id": "3", "mcp.session.id": "s9", "server.address": "kb.internal",
			"gen_ai.tool.call.arguments": map[string]any{"q": "x"}}}
	serverSide = testSpan{name: "tools/call search_docs", kind: ptrace.SpanKindServer, trace: 9, span: 2, parent: 1, startMs: 5040, durMs: 300,
		attrs: map[string]any{"mcp.method.name": "tools/call", "jsonrpc.request.id": "3", "mcp.session.id": "s9", "error.type": "tool_error",
			"gen_ai.tool.call.result": `{"content":[{"type":"text","text":"Rate limit exceeded"}],"isError":true}`}}
)

// executeToolSide is the GenAI execute_tool span over clientSide (when
// clientSide's parent is set to 7): the outer span of the client's call.
var executeToolSide = testSpan{name: "execute_tool search_docs", trace: 9, span: 7, startMs: 4990, durMs: 500,
	res:   map[string]any{"service.name": "agent", "mcplens.tenant": "acme"},
	attrs: map[string]any{"gen_ai.operation.name": "execute_tool", "mcp.session.id": "s9"}}

func (r *otlpRig) send(t *testing.T, spans ...testSpan) {
	t.Helper()
	rejected, msg, err := r.o.Consume(tracesOf(spans...))
	if err != nil || rejected != 0 {
		t.Fatalf("consume: %d rejected (%s), %v", rejected, msg, err)
	}
}

// rowKey is a row's identity in the calls table: its sort key.
func rowKey(c Call) string {
	return fmt.Sprintf("%s/%s/%s/%s/%d/%d", c.Tenant, c.Server, c.Tool, c.SessionKey, c.TimeMs, c.CallID)
}

// final is what FINAL reads: per sort key, the row with the highest
// version (the later one on a tie).
func final(calls []Call) map[string]Call {
	out := map[string]Call{}
	for _, c := range calls {
		k := rowKey(c)
		if old, ok := out[k]; !ok || c.IngestedMs >= old.IngestedMs {
			out[k] = c
		}
	}
	return out
}

// TestOTLPPairsAcrossRequests checks that the two sides of one call,
// exported in different requests in either order and early or late, end
// as one row under FINAL with the server's outcome and the client's start
// and duration.
func TestOTLPPairsAcrossRequests(t *testing.T) {
	for _, tt := range []struct {
		name        string
		first, then testSpan
		gap         time.Duration // between the two exports
		rows        int           // rows written (before FINAL)
		side        string        // of the surviving row
	}{
		{"client first, within the window", clientSide, serverSide, 2 * time.Second, 1, "both"},
		{"server first, within the window", serverSide, clientSide, 2 * time.Second, 1, "both"},
		{"server first, after the window", serverSide, clientSide, 30 * time.Second, 2, "both"},
		{"client first, after the window", clientSide, serverSide, 30 * time.Second, 2, "both"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newOTLPRig(t, OTLPConfig{PairWindow: 10 * time.Second}, 100)
			r.send(t, tt.first)
			if r.b.Queued() != 0 || r.o.Held() != 1 {
				t.Fatalf("first side: %d queued, %d held; want it held", r.b.Queued(), r.o.Held())
			}
			r.now = r.now.Add(tt.gap)
			r.o.release(false)
			r.send(t, tt.then)
			r.now = r.now.Add(time.Minute)
			r.o.release(false)
			rows := r.drain(t)
			if len(rows) != tt.rows {
				t.Fatalf("%d rows written, want %d: %+v", len(rows), tt.rows, rows)
			}
			f := final(rows)
			if len(f) != 1 {
				t.Fatalf("%d rows after FINAL, want 1: %v", len(f), f)
			}
			for _, c := range f {
				if c.Side != tt.side || c.DurationMs != 420 || c.Category != "RATE_LIMITED" || c.IsError != 1 || c.ArgsJSON != `{"q":"x"}` {
					t.Errorf("merged row: side %s, %d ms, %s, isError %d, args %s", c.Side, c.DurationMs, c.Category, c.IsError, c.ArgsJSON)
				}
				if tt.gap < 10*time.Second && (c.TimeMs != otlpBaseMs+5000 || c.Server != "kb" || c.Client != "agent") {
					t.Errorf("paired in the window: time %d, server %s, client %s; want the client's start, the server's name", c.TimeMs, c.Server, c.Client)
				}
			}
			if r.o.Held() != 0 {
				t.Errorf("%d spans still held", r.o.Held())
			}
			when := "late"
			if tt.rows == 1 {
				when = "held"
			}
			if got := testutil.ToFloat64(r.m.pairMerged.WithLabelValues(when)); got != 1 {
				t.Errorf("pairs merged %s: %v, want 1", when, got)
			}
			// The merged row is remembered for 15 minutes, then forgotten
			// for its age, and the reach says the pairer kept it that long.
			if got := testutil.ToFloat64(r.m.pairEntries.WithLabelValues("remembered")); got != 1 {
				t.Errorf("remembered rows gauge %v, want 1", got)
			}
			r.now = r.now.Add(16 * time.Minute)
			r.o.release(false)
			if got := testutil.ToFloat64(r.m.pairForgotten.WithLabelValues("age")); got != 1 {
				t.Errorf("rows forgotten for their age: %v, want 1", got)
			}
			if got := testutil.ToFloat64(r.m.pairReach); got != pairMemory.Seconds() {
				t.Errorf("reach %v s, want %v", got, pairMemory.Seconds())
			}
			if got := testutil.ToFloat64(r.m.pairEntries.WithLabelValues("remembered")) + testutil.ToFloat64(r.m.pairBytes); got != 0 {
				t.Errorf("remembered rows and bytes after 16 minutes: %v, want 0", got)
			}
		})
	}
}

func TestOTLPPairingEdges(t *testing.T) {
	t.Run("an exporter retry of a held span is not a second call", func(t *testing.T) {
		r := newOTLPRig(t, OTLPConfig{PairWindow: 10 * time.Second}, 100)
		r.send(t, clientSide)
		r.send(t, clientSide)
		r.send(t, serverSide)
		r.send(t, serverSide) // after the merge: a duplicate
		if rows := r.drain(t); len(rows) != 1 || rows[0].Side != "both" {
			t.Fatalf("rows: %+v", rows)
		}
	})
	t.Run("the same span twice in one request is one call", func(t *testing.T) {
		// Both sides twice in one request; a client's root span twice, its
		// server side in a later request.
		for i, requests := range [][][]testSpan{
			{{serverSide, serverSide, clientSide, clientSide}},
			{{clientSide, clientSide}, {serverSide}},
		} {
			for _, window := range []time.Duration{0, 10 * time.Second} {
				r := newOTLPRig(t, OTLPConfig{PairWindow: window}, 100)
				for _, spans := range requests {
					r.send(t, spans...)
				}
				r.o.release(true)
				rows := final(r.drain(t))
				if len(rows) != 1 {
					t.Fatalf("case %d, window %v: %d rows under FINAL, want 1: %+v", i, window, len(rows), rows)
				}
				for _, c := range rows {
					if c.Side != "both" {
						t.Errorf("case %d, window %v: side %q, want both", i, window, c.Side)
					}
				}
			}
		}
	})
	t.Run("a client that timed out keeps its view", func(t *testing.T) {
		r := newOTLPRig(t, OTLPConfig{PairWindow: 10 * time.Second}, 100)
		c := clientSide
		c.durMs = 60000
		c.attrs = map[string]any{"mcp.method.name": "tools/call", "jsonrpc.request.id": "3", "mcp.session.id": "s9", "error.type": "timeout"}
		r.send(t, c)
		r.send(t, serverSide)
		rows := r.drain(t)
		if len(rows) != 1 || rows[0].Side != "both" || rows[0].HasResponse != 0 || rows[0].DurationMs != 60000 || rows[0].Message != "timeout" {
			t.Fatalf("rows: %+v", rows)
		}
	})
	t.Run("two calls under one parent span are two calls", func(t *testing.T) {
		r := newOTLPRig(t, OTLPConfig{PairWindow: 10 * time.Second}, 100)
		a, b := clientSide, clientSide
		a.parent, b.parent, b.span = 7, 7, 3
		r.send(t, a)
		r.send(t, b)
		r.o.Flush(t.Context())
		if rows := r.drain(t); len(rows) != 2 {
			t.Fatalf("rows: %+v", rows)
		}
	})
	t.Run("an execute_tool span and its MCP client span in different requests are one call", func(t *testing.T) {
		for _, window := range []time.Duration{10 * time.Second, 0} {
			r := newOTLPRig(t, OTLPConfig{PairWindow: window}, 100)
			inner := clientSide
			inner.parent = 7
			outer := executeToolSide
			r.send(t, inner)
			r.send(t, outer)
			r.send(t, serverSide)
			r.o.Flush(t.Context())
			rows := r.drain(t)
			if f := final(rows); len(f) != 1 {
				t.Fatalf("window %s: %d rows after FINAL: %+v", window, len(f), rows)
			}
			if last := rows[len(rows)-1]; last.Side != "both" || last.Category != "RATE_LIMITED" {
				t.Errorf("window %s: last row %+v", window, last)
			}
		}
	})
	t.Run("a call whose two sides met in their request is remembered", func(t *testing.T) {
		// A collector batches the two sides of a call into one request;
		// one side was stored before, alone, or is sent again alone later
		// (its exporter's retry), or the call's execute_tool span follows.
		// Each is the same call: one row under FINAL, both sides in it.
		// Before, the merged row was never remembered: a copy of its client
		// side sent later was stored alone too, and a side stored before
		// kept its row beside the merged one (FuzzOTLPPairer).
		outer := executeToolSide
		inner := clientSide
		inner.parent = 7
		for _, tt := range []struct {
			name     string
			requests [][]testSpan
		}{
			{"then its client side again", [][]testSpan{{clientSide, serverSide}, {clientSide}}},
			{"then its server side again", [][]testSpan{{serverSide, clientSide}, {serverSide}}},
			{"then both again", [][]testSpan{{serverSide, clientSide}, {clientSide, serverSide}}},
			{"after its server side", [][]testSpan{{serverSide}, {clientSide, serverSide}, {clientSide}}},
			{"after its client side", [][]testSpan{{clientSide}, {clientSide, serverSide}}},
			{"after its client side, then its server side again", [][]testSpan{{clientSide}, {clientSide, serverSide}, {serverSide}}},
			{"then its execute_tool span", [][]testSpan{{inner, serverSide}, {outer}, {inner}}},
		} {
			for _, window := range []time.Duration{0, 10 * time.Second} {
				r := newOTLPRig(t, OTLPConfig{PairWindow: window}, 100)
				for _, spans := range tt.requests {
					r.send(t, spans...)
				}
				r.o.release(true)
				rows := r.drain(t)
				f := final(rows)
				if len(f) != 1 {
					t.Errorf("%s, window %v: %d rows under FINAL, want 1: %+v", tt.name, window, len(f), rows)
					continue
				}
				for _, c := range f {
					if c.Side != "both" || c.Category != "RATE_LIMITED" || c.DurationMs != 420 && tt.name != "then its execute_tool span" {
						t.Errorf("%s, window %v: row %+v", tt.name, window, c)
					}
				}
			}
		}
	})
	t.Run("a call's three spans in one request are one row in any order", func(t *testing.T) {
		// Both sides of a call and an inner span of one side, batched into
		// one request by a Collector: a span of the server's side under the
		// server span (side unknown, or server), or the client's
		// execute_tool span over the client span. The spans come in any
		// order. Before, an inner span met after its parent had merged
		// with the other side was stored as a second row.
		inner := serverSide
		inner.kind = ptrace.SpanKindInternal
		inner.span, inner.parent, inner.startMs = 3, 2, serverSide.startMs+5
		innerServer := inner
		innerServer.kind = ptrace.SpanKindServer
		client := clientSide
		client.parent = 7
		outer := executeToolSide
		for _, tt := range []struct {
			name  string
			spans []testSpan
		}{
			{"an inner span of unknown side", []testSpan{clientSide, serverSide, inner}},
			{"an inner server span", []testSpan{clientSide, serverSide, innerServer}},
			{"an outer execute_tool span", []testSpan{client, serverSide, outer}},
		} {
			for _, order := range [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
				r := newOTLPRig(t, OTLPConfig{}, 100)
				r.send(t, tt.spans[order[0]], tt.spans[order[1]], tt.spans[order[2]])
				rows := final(r.drain(t))
				if len(rows) != 1 {
					t.Errorf("%s, order %v: %d rows under FINAL, want 1: %+v", tt.name, order, len(rows), rows)
					continue
				}
				for _, c := range rows {
					if c.Side != "both" || c.Category != "RATE_LIMITED" {
						t.Errorf("%s, order %v: row %+v", tt.name, order, c)
					}
				}
			}
		}
	})
	t.Run("mcp-go's tool.{name} child alone is not a call", func(t *testing.T) {
		calls, _, rejected, _ := testProcessor().Traces(tracesOf(testSpan{name: "tool.create_issue", span: 2, parent: 1,
			attrs: map[string]any{"mcp.tool.name": "create_issue"}, status: ptrace.StatusCodeError, msg: "tool returned error result"}), OTLPConfig{}, testNow())
		if len(calls) != 0 || rejected != 0 {
			t.Fatalf("calls %+v, rejected %d", calls, rejected)
		}
	})
	t.Run("both sides in one request merge without waiting", func(t *testing.T) {
		r := newOTLPRig(t, OTLPConfig{PairWindow: 10 * time.Second}, 100)
		r.send(t, serverSide, clientSide)
		if rows := r.drain(t); len(rows) != 1 || rows[0].Side != "both" || rows[0].TimeMs != otlpBaseMs+5000 {
			t.Fatalf("rows: %+v", rows)
		}
	})
	t.Run("a span that cannot be linked is not held", func(t *testing.T) {
		r := newOTLPRig(t, OTLPConfig{PairWindow: 10 * time.Second}, 100)
		s := serverSide
		s.parent = 0
		r.send(t, s)
		if r.o.Held() != 0 || r.b.Queued() != 1 {
			t.Fatalf("held %d queued %d", r.o.Held(), r.b.Queued())
		}
	})
	t.Run("a full pair buffer emits at once", func(t *testing.T) {
		r := newOTLPRig(t, OTLPConfig{PairWindow: 10 * time.Second, PairCapacity: 1}, 100)
		s2 := clientSide
		s2.trace = 10
		r.send(t, clientSide)
		r.send(t, s2)
		if r.o.Held() != 1 || r.b.Queued() != 1 {
			t.Fatalf("held %d queued %d", r.o.Held(), r.b.Queued())
		}
	})
	t.Run("Flush emits what is held", func(t *testing.T) {
		r := newOTLPRig(t, OTLPConfig{PairWindow: time.Hour}, 100)
		r.send(t, clientSide)
		if err := r.o.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if rows := r.drain(t); len(rows) != 1 || rows[0].Side != "client" || rows[0].Server != "kb.internal" {
			t.Fatalf("rows: %+v", rows)
		}
	})
	t.Run("a full queue keeps held spans held", func(t *testing.T) {
		r := newOTLPRig(t, OTLPConfig{PairWindow: time.Second}, 1)
		s := serverSide
		s.parent = 0
		r.send(t, clientSide)
		r.send(t, s) // fills the queue
		r.now = r.now.Add(time.Minute)
		if r.o.release(false) || r.o.Held() != 1 {
			t.Fatalf("released into a full queue; held %d", r.o.Held())
		}
		if got := testutil.ToFloat64(r.m.dropped.WithLabelValues("buffer_full")); got != 0 {
			t.Errorf("dropped{buffer_full} = %v for calls that are still held", got)
		}
	})
}

// TestOTLPHTTP covers the transport rules of POST /v1/traces.
func TestOTLPHTTP(t *testing.T) {
	good := readFixture(t, "semconv.json")
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(bytes.Repeat([]byte(" "), 8<<20))
	zw.Close()
	for _, tc := range []struct {
		name     string
		method   string
		headers  map[string]string
		body     []byte
		status   int
		want     string // substring of the response body
		capacity int
	}{
		{name: "json", body: good, status: 200, want: `{"partialSuccess":{}}`},
		{name: "gzip protobuf", headers: map[string]string{"Content-Type": otlpProtobuf, "Content-Encoding": "gzip"}, body: gz(string(protoOf(t, good))), status: 200},
		{name: "content type with charset", headers: map[string]string{"Content-Type": "application/json; charset=utf-8"}, body: good, status: 200},
		{name: "wrong method", method: http.MethodGet, status: 405, want: "use POST"},
		{name: "unsupported content type", headers: map[string]string{"Content-Type": "application/x-ndjson"}, body: good, status: 415, want: `application/x-ndjson`},
		{name: "unsupported encoding", headers: map[string]string{"Content-Encoding": "br"}, body: good, status: 415, want: `Content-Encoding \"br\"`},
		{name: "bad gzip", headers: map[string]string{"Content-Encoding": "gzip"}, body: []byte("nope"), status: 400, want: "gzip body"},
		{name: "undecodable json", body: []byte(`{"resourceSpans":[{`), status: 400, want: "decode application/json"},
		{name: "undecodable protobuf", headers: map[string]string{"Content-Type": otlpProtobuf}, body: []byte{0x0a, 0xff, 0x01}, status: 400},
		{name: "body over the limit", body: bytes.Repeat([]byte(" "), 2<<20), status: 413, want: "-max-body-bytes"},
		{name: "gzip bomb", headers: map[string]string{"Content-Encoding": "gzip"}, body: bomb.Bytes(), status: 413, want: "-max-decompressed-bytes"},
		{name: "queue full", body: good, capacity: 1, status: 503, want: "raise -queue-capacity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			capacity := tc.capacity
			if capacity == 0 {
				capacity = 100
			}
			r := newOTLPRig(t, OTLPConfig{}, capacity)
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, "/v1/traces", bytes.NewReader(tc.body))
			req.Header.Set("Content-Type", otlpJSON)
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			r.o.ServeHTTP(rec, req)
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
				t.Fatalf("got %d %s, want %d containing %s", rec.Code, rec.Body.String(), tc.status, tc.want)
			}
			if rec.Code != 200 {
				st := &spb.Status{}
				var err error
				if req.Header.Get("Content-Type") == otlpProtobuf {
					err = proto.Unmarshal(rec.Body.Bytes(), st)
				} else {
					err = protojson.Unmarshal(rec.Body.Bytes(), st)
				}
				if err != nil || st.Message == "" {
					t.Errorf("error body is not a google.rpc.Status: %v %q", err, rec.Body)
				}
			}
			if tc.status == 503 && rec.Header().Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
		})
	}
}

// TestOTLPLimits: spans past -otlp-max-spans and attributes past
// -otlp-max-attribute-bytes are counted, with reasons.
func TestOTLPLimits(t *testing.T) {
	r := newOTLPRig(t, OTLPConfig{MaxSpans: 2, MaxAttributeBytes: 64}, 100)
	span := func(id byte, args string) testSpan {
		return testSpan{name: "tools/call a", span: id, attrs: map[string]any{"gen_ai.tool.call.arguments": args}}
	}
	rejected, msg, err := r.o.Consume(tracesOf(span(1, `{"q":"short"}`), span(2, `{"q":"`+strings.Repeat("x", 100)+`"}`), span(3, "{}"), span(4, "{}")))
	if err != nil {
		t.Fatal(err)
	}
	if rejected != 2 || !strings.Contains(msg, "2 spans past the limit of 2 per request") || !strings.Contains(msg, "1 attribute values over 64 bytes ignored") {
		t.Errorf("rejected %d, message %q", rejected, msg)
	}
	calls := r.drain(t)
	if len(calls) != 2 || calls[0].ArgsJSON != `{"q":"short"}` || calls[1].ArgsJSON != "" {
		t.Errorf("calls: %+v", calls)
	}
	for _, c := range []struct {
		m    prometheus.Collector
		want float64
	}{
		{r.m.lines.WithLabelValues("otlp", "accepted"), 2},
		{r.m.lines.WithLabelValues("otlp", "rejected"), 2},
		{r.m.rejected.WithLabelValues("too_many_spans"), 2},
		{r.m.rejected.WithLabelValues("attribute_too_large"), 1},
	} {
		if got := testutil.ToFloat64(c.m); got != c.want {
			t.Errorf("%v = %v, want %v", c.m, got, c.want)
		}
	}
	if len(r.ins.dead) != 1 || !strings.Contains(r.ins.dead[0].Reason, "-otlp-max-spans") {
		t.Errorf("dead letters: %+v", r.ins.dead)
	}
}

// TestOTLPDeadLetterHoldsTheRejectedSpan checks that a span rejected
// when its row is built gets a dead letter with its own capture line, also
// when other spans of the request were built after it: spans with a
// parent are built before the pairer decides, and rejected by it.
func TestOTLPDeadLetterHoldsTheRejectedSpan(t *testing.T) {
	deep := `{"q":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`
	span := func(id byte, reqID, args string) testSpan {
		return testSpan{name: "tools/call a", kind: ptrace.SpanKindServer, trace: id, span: id, parent: 100 + id, attrs: map[string]any{
			"mcp.method.name": "tools/call", "jsonrpc.request.id": reqID, "mcp.session.id": "s1", "gen_ai.tool.call.arguments": args}}
	}
	for _, spans := range [][]testSpan{
		{span(1, "bad-1", deep), span(2, "ok-2", `{"q":"x"}`)},
		{span(1, "ok-1", `{"q":"x"}`), span(2, "bad-2", deep)},
		{span(1, "bad-1", deep)},
	} {
		bad := ""
		for _, sp := range spans {
			if id := sp.attrs["jsonrpc.request.id"].(string); strings.HasPrefix(id, "bad") {
				bad = id
			}
		}
		for _, root := range []bool{false, true} {
			if root {
				for i := range spans {
					spans[i].parent = 0
				}
			}
			r := newOTLPRig(t, OTLPConfig{}, 100)
			rejected, msg, err := r.o.Consume(tracesOf(spans...))
			if err != nil || rejected != 1 || !strings.Contains(msg, "JSON nesting deeper than 64") {
				t.Fatalf("%s, root %v: %d rejected (%s), %v", bad, root, rejected, msg, err)
			}
			calls := r.drain(t)
			if len(calls) != len(spans)-1 || len(r.ins.dead) != 1 {
				t.Fatalf("%s, root %v: %d calls, dead letters %+v", bad, root, len(calls), r.ins.dead)
			}
			dl := r.ins.dead[0]
			if !strings.Contains(dl.Payload, `"id":"`+bad+`"`) || !strings.Contains(dl.Payload, deep) || !strings.Contains(dl.Reason, "nesting") {
				t.Errorf("%s, root %v: dead letter %q: %s", bad, root, dl.Reason, dl.Payload)
			}
		}
	}
}

// TestOTLPGRPC exports over a loopback gRPC connection with pdata's client.
func TestOTLPGRPC(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity int
		code     codes.Code
	}{
		{"accepted with a partial success", 100, codes.OK},
		{"queue full is UNAVAILABLE", 1, codes.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newOTLPRig(t, OTLPConfig{}, tc.capacity)
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := NewOTLPGRPCServer(r.o)
			go srv.Serve(lis)
			defer srv.Stop()
			cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			req := ptraceotlp.NewExportRequest()
			if err := req.UnmarshalJSON(readFixture(t, "openlit.json")); err != nil {
				t.Fatal(err)
			}
			resp, err := ptraceotlp.NewGRPCClient(cc).Export(t.Context(), req, grpc.UseCompressor("gzip"))
			if status.Code(err) != tc.code {
				t.Fatalf("export: %v, want %s", err, tc.code)
			}
			if tc.code != codes.OK {
				return
			}
			if ps := resp.PartialSuccess(); ps.RejectedSpans() != 1 || !strings.Contains(ps.ErrorMessage(), "tool name missing") {
				t.Errorf("partial success: %d %q", ps.RejectedSpans(), ps.ErrorMessage())
			}
			if n := len(r.drain(t)); n != 3 {
				t.Errorf("%d calls, want 3", n)
			}
		})
	}
}

// TestOTLPPairerStaysWithinItsByteBudget: remembered rows are forgotten,
// oldest first, once their footprint passes PairMaxBytes, and a span is not
// held when the held spans alone would pass it; a late side of a row still
// remembered merges into it, one of a forgotten row makes a row of its own.
func TestOTLPPairerStaysWithinItsByteBudget(t *testing.T) {
	// The i-th call: its own trace and request id, both sides.
	call := func(s testSpan, i int) testSpan {
		s.trace = byte(100 + i)
		s.attrs = maps.Clone(s.attrs)
		s.attrs["jsonrpc.request.id"] = strconv.Itoa(i)
		return s
	}
	server := func(i int) testSpan { return call(serverSide, i) }
	client := func(i int) testSpan { return call(clientSide, i) }
	one := pairEntry{}
	t.Run("remembered rows", func(t *testing.T) {
		r := newOTLPRig(t, OTLPConfig{PairMaxBytes: 10 * one.footprint()}, 1000)
		for i := range 40 {
			r.now = r.now.Add(time.Second)
			r.send(t, server(i))
			if p := r.o.pair; p.bytes > p.maxBytes || p.bytes <= 0 {
				t.Fatalf("after %d spans: %d bytes remembered, budget %d", i+1, p.bytes, p.maxBytes)
			}
		}
		_, kept := r.o.pair.counts()
		if kept == 0 || kept >= 10 {
			t.Fatalf("%d rows remembered under a budget of 10 empty entries", kept)
		}
		// Every row forgotten so far went for the byte budget, and the
		// reach is how long the last of them had been remembered: one
		// second per span sent since.
		if got := testutil.ToFloat64(r.m.pairForgotten.WithLabelValues("bytes")); got != float64(40-kept) {
			t.Fatalf("rows forgotten for bytes: %v, want %d", got, 40-kept)
		}
		if got := testutil.ToFloat64(r.m.pairForgotten.WithLabelValues("age")) + testutil.ToFloat64(r.m.pairForgotten.WithLabelValues("capacity")); got != 0 {
			t.Fatalf("rows forgotten for age or capacity: %v, want 0", got)
		}
		if got := testutil.ToFloat64(r.m.pairReach); got != float64(kept) {
			t.Fatalf("reach %v s with %d rows remembered, one sent a second; want %d", got, kept, kept)
		}
		if got := testutil.ToFloat64(r.m.pairEntries.WithLabelValues("remembered")); got != float64(kept) {
			t.Fatalf("remembered rows gauge %v, want %d", got, kept)
		}
		if got, p := testutil.ToFloat64(r.m.pairBytes), r.o.pair; got != float64(p.bytes) || got > float64(p.maxBytes) {
			t.Fatalf("bytes gauge %v, pairer %d, budget %d", got, p.bytes, p.maxBytes)
		}
		r.send(t, client(39)) // its row is remembered: merges
		r.send(t, client(0))  // forgotten: a row of its own
		if got := testutil.ToFloat64(r.m.pairMerged.WithLabelValues("late")); got != 1 {
			t.Fatalf("late merges %v, want 1 (client 39; client 0's row was forgotten)", got)
		}
		f := final(r.drain(t))
		if len(f) != 41 {
			t.Fatalf("%d rows after FINAL, want 40 server rows and the forgotten call's client row", len(f))
		}
		sides := map[string]int{}
		for _, c := range f {
			sides[c.Side]++
		}
		if sides["both"] != 1 || sides["client"] != 1 || sides["server"] != 39 {
			t.Fatalf("sides %v, want 1 merged, 1 client alone, 39 server", sides)
		}
	})
	t.Run("held spans", func(t *testing.T) {
		r := newOTLPRig(t, OTLPConfig{PairWindow: time.Hour, PairMaxBytes: 10 * one.footprint()}, 1000)
		for i := range 40 {
			r.send(t, client(i))
		}
		held := r.o.Held()
		if held == 0 || held >= 10 || r.b.Queued() != 40-held {
			t.Fatalf("%d held and %d queued of 40 under a budget of 10 empty entries", held, r.b.Queued())
		}
		if got := testutil.ToFloat64(r.m.pairEntries.WithLabelValues("held")); got != float64(held) {
			t.Fatalf("held spans gauge %v, want %d", got, held)
		}
		if p := r.o.pair; p.heldBytes > p.maxBytes || p.bytes > p.maxBytes {
			t.Fatalf("held %d bytes, %d in all, budget %d", p.heldBytes, p.bytes, p.maxBytes)
		}
		if err := r.o.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		if rows := r.drain(t); len(rows) != 40 {
			t.Fatalf("%d rows after Flush, want 40", len(rows))
		}
		if p := r.o.pair; p.heldBytes != 0 {
			t.Fatalf("%d held bytes counted after Flush", p.heldBytes)
		}
	})
}
