package pipeline

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/mcplens/mcplens/traffic"
)

// The OTLP corpus is the input of the receiver's equivalence checks: the
// dialect fixtures, bodies built from the traffic generator's calls as
// bench/ingestbench builds them, those bodies with spans rearranged
// (kinds, parents, attributes mutated), and byte-level mutations of all of
// them (flipped, inserted and dropped bytes, truncations).

// otlpCorpus returns protobuf ExportTraceServiceRequest bodies.
func otlpCorpus(tb testing.TB, mutations int) [][]byte {
	tb.Helper()
	var bodies [][]byte
	for _, name := range fixtureNames(tb) {
		bodies = append(bodies, protoOf(tb, readFixture(tb, name+".json")))
	}
	lines := generatorLines(tb, 1200)
	rng := rand.New(rand.NewPCG(8, 11))
	id := uint64(0)
	for i := 0; i < len(lines); i += 40 {
		td := ptrace.NewTraces()
		for _, l := range lines[i:min(i+40, len(lines))] {
			id++
			if err := benchSpan(td, l, id); err != nil {
				tb.Fatal(err)
			}
		}
		bodies = append(bodies, marshalTraces(tb, td))
		rearrange(rng, td)
		bodies = append(bodies, marshalTraces(tb, td))
	}
	n := len(bodies)
	for range mutations {
		bodies = append(bodies, mutateProto(rng, bodies[rng.IntN(n)]))
	}
	return bodies
}

func marshalTraces(tb testing.TB, td ptrace.Traces) []byte {
	tb.Helper()
	b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// benchSpan adds the span bench/ingestbench makes of a capture line (a
// semconv server span without a parent); lines that are not tools/call are
// skipped.
func benchSpan(td ptrace.Traces, line []byte, id uint64) error {
	_, err := traffic.AppendServerSpan(td, line, id, false)
	return err
}

// rearrange changes td in place so that it reaches pairing, folding,
// other dialects and odd attribute values: kinds, parents pointing at
// other spans, shared trace ids, renamed spans, attributes of other types
// and mutated strings.
func rearrange(rng *rand.Rand, td ptrace.Traces) {
	var all []ptrace.Span
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			sps := sss.At(j).Spans()
			for k := 0; k < sps.Len(); k++ {
				all = append(all, sps.At(k))
			}
		}
	}
	kinds := []ptrace.SpanKind{ptrace.SpanKindClient, ptrace.SpanKindServer, ptrace.SpanKindInternal, ptrace.SpanKindUnspecified}
	names := []string{"mcp.tools/call", "MCP request: tools/call", "execute_tool x", "tools/list", "x.tool", "tool.y", "mcp tools/call"}
	for i, sp := range all {
		switch rng.IntN(6) {
		case 0:
			sp.SetKind(kinds[rng.IntN(len(kinds))])
		case 1:
			if i > 0 {
				p := all[rng.IntN(i)]
				sp.SetTraceID(p.TraceID())
				sp.SetParentSpanID(p.SpanID())
				sp.SetKind(kinds[rng.IntN(2)])
			}
		case 2:
			sp.SetName(names[rng.IntN(len(names))])
		case 3:
			a := sp.Attributes()
			switch rng.IntN(6) {
			case 0:
				a.PutInt("rpc.jsonrpc.error_code", rng.Int64N(70000)-35000)
			case 1:
				a.PutBool("mcp.tool.result.is_error", rng.IntN(2) == 0)
			case 2:
				a.PutDouble("mcp.error.code", float64(rng.IntN(40000))-32700.5*float64(rng.IntN(2)))
			case 3:
				m := a.PutEmptyMap("gen_ai.tool.call.arguments")
				m.PutStr("q", "x\"y")
				m.PutEmptySlice("l").AppendEmpty().SetInt(3)
			case 4:
				a.PutEmptyBytes("mcp.request.argument.b").FromRaw([]byte{1, 2, 0xff})
				a.PutStr("mcp.request.argument.a", `{"k":1}`)
			case 5:
				a.Remove("gen_ai.tool.name")
			}
		case 4:
			a := sp.Attributes()
			a.Range(func(k string, v pcommon.Value) bool {
				if v.Type() == pcommon.ValueTypeStr && rng.IntN(3) == 0 {
					v.SetStr(string(mutate(rng, []byte(v.Str()))))
				}
				return true
			})
		case 5:
			ev := sp.Events().AppendEmpty()
			ev.SetName("exception")
			ev.Attributes().PutStr("exception.type", "TimeoutError")
			ev.Attributes().PutStr("exception.message", "timed out")
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
	}
}

// mutateProto changes one to four bytes of b, inserts or drops bytes, or
// truncates it.
func mutateProto(rng *rand.Rand, b []byte) []byte {
	b = bytes.Clone(b)
	if len(b) == 0 {
		return b
	}
	for k := rng.IntN(4) + 1; k > 0; k-- {
		p := rng.IntN(len(b))
		switch rng.IntN(5) {
		case 0, 1:
			b[p] = byte(rng.IntN(256))
		case 2:
			b[p] ^= 1 << rng.IntN(8)
		case 3:
			b = append(b[:p:p], append([]byte{byte(rng.IntN(256))}, b[p:]...)...)
		case 4:
			b = b[:p]
		}
		if len(b) == 0 {
			break
		}
	}
	return b
}

// otlpDiscard is an Inserter that keeps nothing.
type otlpDiscard struct{}

func (otlpDiscard) WriteBatch(context.Context, *Batch) error             { return nil }
func (otlpDiscard) WriteDeadLetters(context.Context, []DeadLetter) error { return nil }

// BenchmarkOTLPHTTP posts the spans bench/ingestbench sends (the traffic
// generator's calls as semconv server spans, 1,000 per protobuf body) to
// the HTTP receiver, which queues them on a Batcher flushing into an
// Inserter that keeps nothing. ns/span, B/span and allocs/span are the
// receiver's cost of one span, from the body to the queue.
func BenchmarkOTLPHTTP(b *testing.B) {
	benchOTLPHTTP(b, 4000, rootSpans)
}

// BenchmarkOTLPHTTPWithParent is BenchmarkOTLPHTTP for server spans with a
// parent span id: each is stored at once and remembered by the pairer for
// its client's side, so the pairer runs at its byte budget (the default
// 16 MiB), forgetting its oldest rows, and the collector marks what it
// remembers. The 40,000 spans sent in turn are more than it remembers, so
// a span sent again is new to it.
func BenchmarkOTLPHTTPWithParent(b *testing.B) {
	benchOTLPHTTP(b, 40000, spansWithParent)
}

// BenchmarkOTLPHTTPBothSides is BenchmarkOTLPHTTP for both sides of every
// call in one request (a Collector that batched them): 500 server spans
// and their 500 client spans a request, merged there into one row a call,
// which the pairer remembers (a copy of either side sent later is the same
// call). ns/span is per span; a call is two.
func BenchmarkOTLPHTTPBothSides(b *testing.B) {
	benchOTLPHTTP(b, 20000, bothSides)
}

// The spans benchOTLPHTTP sends for each call.
const (
	rootSpans       = iota // a server span without a parent
	spansWithParent        // a server span whose parent is its client's span
	bothSides              // the server span with a parent and its client's span
)

// benchOTLPHTTP posts n generated calls as spans of the kind given, 1,000
// spans a request, through the OTLP receiver into a Batcher that discards
// the batches.
func benchOTLPHTTP(b *testing.B, n int, kind int) {
	lines := generatorLines(b, n)
	var bodies [][]byte
	spans := 0
	perRequest := 1000
	if kind == bothSides {
		perRequest = 500
	}
	for i := 0; i < len(lines); i += perRequest {
		td := ptrace.NewTraces()
		for j, l := range lines[i:min(i+perRequest, len(lines))] {
			if _, err := traffic.AppendServerSpan(td, l, uint64(i+j+1), kind != rootSpans); err != nil {
				b.Fatal(err)
			}
			if kind != bothSides {
				continue
			}
			if _, err := traffic.AppendClientSpan(td, l, uint64(i+j+1)); err != nil {
				b.Fatal(err)
			}
		}
		spans += td.SpanCount()
		bodies = append(bodies, marshalTraces(b, td))
	}
	m := NewMetrics(prometheus.NewRegistry())
	batcher := NewBatcher(otlpDiscard{}, BatchConfig{BatchSize: 100000, FlushEvery: time.Second, QueueCapacity: 300000, Inserts: 2}, m, quietLog())
	o := NewOTLP(testProcessor(), batcher, m, HTTPConfig{}, OTLPConfig{}, quietLog())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = batcher.Run(ctx) }()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, body := range bodies {
			for {
				req := httptest.NewRequest(http.MethodPost, "/v1/traces", bytes.NewReader(body))
				req.Header.Set("Content-Type", otlpProtobuf)
				rec := httptest.NewRecorder()
				o.ServeHTTP(rec, req)
				if rec.Code == http.StatusOK {
					break
				}
				if rec.Code != http.StatusServiceUnavailable {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
				time.Sleep(10 * time.Microsecond) // queue full: the flusher catches up
			}
		}
	}
	b.StopTimer()
	cancel()
	<-done
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spans), "ns/span")
	b.ReportMetric(float64(spans), "spans/op")
}
