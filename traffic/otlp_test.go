package traffic_test

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/mcplens/mcplens/traffic"
)

// TestClientSpanIsTheServerSpansParent requires the two sides of one call
// to name each other as a semconv-propagating client and server do: same
// trace, the server's parent is the client's span, kinds CLIENT and
// SERVER, and the client's failure on the client's side.
func TestClientSpanIsTheServerSpansParent(t *testing.T) {
	lines := []string{
		`{"time":"2026-11-29T10:00:00.000Z","duration_ms":12,"tenant":"acme","server":"docs","client":"cli","session_id":"s1","request":{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}},"response":{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad q"}}}`,
		`{"time":"2026-11-29T10:00:01.000Z","tenant":"acme","server":"docs","request":{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"search"}},"error":"connection reset"}`,
	}
	wantErr := []string{"-32602", "connection reset"}
	for i, l := range lines {
		td := ptrace.NewTraces()
		id := uint64(100 + i)
		if ok, err := traffic.AppendClientSpan(td, []byte(l), id); !ok || err != nil {
			t.Fatalf("line %d: client span %v %v", i, ok, err)
		}
		if ok, err := traffic.AppendServerSpan(td, []byte(l), id, true); !ok || err != nil {
			t.Fatalf("line %d: server span %v %v", i, ok, err)
		}
		cl := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
		sv := td.ResourceSpans().At(1).ScopeSpans().At(0).Spans().At(0)
		if cl.Kind() != ptrace.SpanKindClient || sv.Kind() != ptrace.SpanKindServer {
			t.Fatalf("line %d: kinds %v and %v", i, cl.Kind(), sv.Kind())
		}
		if cl.TraceID() != sv.TraceID() || sv.ParentSpanID() != cl.SpanID() || cl.SpanID() == sv.SpanID() || !cl.ParentSpanID().IsEmpty() {
			t.Fatalf("line %d: client %v/%v (parent %v), server %v/%v (parent %v)", i,
				cl.TraceID(), cl.SpanID(), cl.ParentSpanID(), sv.TraceID(), sv.SpanID(), sv.ParentSpanID())
		}
		if sv.StartTimestamp()-cl.StartTimestamp() != pcommon.Timestamp(time.Millisecond) {
			t.Errorf("line %d: client starts %v, server %v; want the client 1 ms earlier", i, cl.StartTimestamp(), sv.StartTimestamp())
		}
		if v, _ := cl.Attributes().Get("error.type"); v.Str() != wantErr[i] {
			t.Errorf("line %d: client error.type %q, want %q", i, v.Str(), wantErr[i])
		}
		if v, _ := cl.Attributes().Get("server.address"); v.Str() != "docs" {
			t.Errorf("line %d: client server.address %q", i, v.Str())
		}
		if _, ok := cl.Attributes().Get("gen_ai.tool.call.result"); ok {
			t.Errorf("line %d: the client span carries the result", i)
		}
	}
	if ok, err := traffic.AppendClientSpan(ptrace.NewTraces(), []byte(`{"time":"2026-11-29T10:00:00Z","request":{"method":"tools/list"}}`), 1); ok || err != nil {
		t.Fatalf("tools/list: %v %v, want false, nil", ok, err)
	}
}
