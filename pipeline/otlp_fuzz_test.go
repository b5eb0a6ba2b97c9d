package pipeline

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// FuzzDecodeOTLP feeds OTLP bodies, protobuf and JSON, seeded from the
// dialect fixtures, through the decoder. No input may panic, and every
// call keeps the invariants the writer and the queries rely on.
func FuzzDecodeOTLP(f *testing.F) {
	for _, name := range fixtureNames(f) {
		body := readFixture(f, name+".json")
		f.Add(body, false)
		f.Add(protoOf(f, body), true)
	}
	p := testProcessor()
	cfg := OTLPConfig{MaxSpans: 64, MaxAttributeBytes: 4 << 10}
	f.Fuzz(func(t *testing.T, body []byte, isProto bool) {
		req := ptraceotlp.NewExportRequest()
		var err error
		if isProto {
			err = req.UnmarshalProto(body)
		} else {
			err = req.UnmarshalJSON(body)
		}
		if err != nil {
			return
		}
		calls, dead, rejected, msg := p.Traces(req.Traces(), cfg, testNow())
		if rejected > 0 && (msg == "" || len(dead) == 0) {
			t.Fatalf("%d rejected without a message or dead letter", rejected)
		}
		for _, c := range calls {
			switch {
			case c.Source != "otlp":
				t.Fatalf("source %q", c.Source)
			case c.Tool == "":
				t.Fatal("call without a tool")
			case c.TimeMs < 0 || c.TimeMs >= maxTimeMs || !c.Time.Equal(time.UnixMilli(c.TimeMs)):
				t.Fatalf("time %v / %d", c.Time, c.TimeMs)
			case c.Side != "client" && c.Side != "server" && c.Side != "both" && c.Side != "":
				t.Fatalf("side %q", c.Side)
			case c.Category == "" || c.TaxonomyVersion == "":
				t.Fatal("call not classified")
			case len(c.ArgKeys) != len(c.ArgValues):
				t.Fatal("argument keys and values differ in length")
			case c.SessionKey == "":
				t.Fatal("empty session key")
			}
		}
	})
}

// fixtureBodies returns every dialect fixture as the protobuf body an
// exporter sends, and how many spans they hold.
func fixtureBodies(b *testing.B) (bodies [][]byte, spans int) {
	for _, name := range fixtureNames(b) {
		body := protoOf(b, readFixture(b, name+".json"))
		bodies = append(bodies, body)
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err != nil {
			b.Fatal(err)
		}
		spans += req.Traces().SpanCount()
	}
	return bodies, spans
}

// BenchmarkDecodeOTLP decodes every dialect fixture, as the protobuf an
// exporter sends, through the shared path (unmarshal, decode, pair,
// classify). ns/span is the cost of one span.
func BenchmarkDecodeOTLP(b *testing.B) {
	bodies, spans := fixtureBodies(b)
	p := testProcessor()
	now := testNow()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, body := range bodies {
			req := ptraceotlp.NewExportRequest()
			if err := req.UnmarshalProto(body); err != nil {
				b.Fatal(err)
			}
			p.Traces(req.Traces(), OTLPConfig{}, now)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spans), "ns/span")
	b.ReportMetric(float64(spans), "spans/op")
}

// BenchmarkDecodeOTLPWire is BenchmarkDecodeOTLP through the HTTP
// receiver's protobuf path: the wire reader, and pdata for the bodies it
// leaves to pdata (here semconv's, and those with a rejected span).
func BenchmarkDecodeOTLPWire(b *testing.B) {
	bodies, spans := fixtureBodies(b)
	p := testProcessor()
	now := testNow()
	var w wireTraces
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, body := range bodies {
			tracesProto(p, &w, body, OTLPConfig{}, now)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spans), "ns/span")
	b.ReportMetric(float64(spans), "spans/op")
}
