package pipeline

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// wireVsPdata posts body to a's HTTP receiver, which reads protobuf with
// the wire reader, and gives the same body to b the way the receiver did
// before it had one: pdata's UnmarshalProto, then Consume. It fails when
// the answers differ, and when the wire reader accepts a body pdata
// rejects. It reports whether the wire reader took the body. Afterwards it
// scribbles over the memory a keeps for the next request, so that a row
// or a held span still aliasing the body shows as a difference.
func wireVsPdata(t testing.TB, a, b *otlpRig, body []byte) bool {
	t.Helper()
	var w wireTraces
	took := w.read(body)
	req := httptest.NewRequest(http.MethodPost, "/v1/traces", bytes.NewReader(body))
	req.Header.Set("Content-Type", otlpProtobuf)
	rec := httptest.NewRecorder()
	a.o.ServeHTTP(rec, req)
	s := a.o.pool.get()
	for i := range s.body[:cap(s.body)] {
		s.body[:cap(s.body)][i] = 0xa5
	}
	a.o.pool.put(s)

	preq := ptraceotlp.NewExportRequest()
	if err := preq.UnmarshalProto(body); err != nil {
		if took {
			t.Fatalf("the wire reader read a body pdata rejects (%v): %x", err, body)
		}
		if rec.Code != http.StatusBadRequest {
			t.Fatalf("pdata rejects the body (%v), the receiver answered %d", err, rec.Code)
		}
		return false
	}
	rejected, msg, err := b.o.Consume(preq.Traces())
	want := exportResponse(rejected, msg)
	wantBody, _ := want.MarshalProto()
	switch {
	case err != nil && rec.Code != http.StatusServiceUnavailable:
		t.Fatalf("pdata: %v; receiver: %d %q", err, rec.Code, rec.Body)
	case err == nil && (rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), wantBody)):
		got := ptraceotlp.NewExportResponse()
		_ = got.UnmarshalProto(rec.Body.Bytes())
		t.Fatalf("response %d %+v, want %d rejected, %q", rec.Code, got.PartialSuccess(), rejected, msg)
	}
	return took
}

// sameRows fails when a and b queued different rows or dead letters.
func sameRows(t testing.TB, a, b *otlpRig) {
	t.Helper()
	a.o.release(true)
	b.o.release(true)
	ca, cb := a.drain(t.(*testing.T)), b.drain(t.(*testing.T))
	if len(ca) != len(cb) {
		t.Fatalf("%d rows, want %d", len(ca), len(cb))
	}
	for i := range ca {
		if ga, gb := fmt.Sprintf("%+v", ca[i]), fmt.Sprintf("%+v", cb[i]); ga != gb {
			t.Fatalf("row %d:\n got %s\nwant %s", i, ga, gb)
		}
	}
	a.ins.mu.Lock()
	b.ins.mu.Lock()
	defer a.ins.mu.Unlock()
	defer b.ins.mu.Unlock()
	if ga, gb := fmt.Sprintf("%+v", a.ins.dead), fmt.Sprintf("%+v", b.ins.dead); ga != gb {
		t.Fatalf("dead letters:\n got %s\nwant %s", ga, gb)
	}
}

// TestOTLPWireMatchesPdata posts the OTLP corpus (fixtures, generator
// bodies, rearranged and byte-mutated bodies) to two receivers, one
// reading protobuf with the wire reader and one with pdata, with and
// without a pair window (held spans then outlive their request), and
// checks that responses, rows and dead letters are the same.
func TestOTLPWireMatchesPdata(t *testing.T) {
	bodies := otlpCorpus(t, 3000)
	for _, cfg := range []OTLPConfig{{MaxSpans: 30, MaxAttributeBytes: 2 << 10}, {PairWindow: 10 * time.Second}} {
		a, b := newOTLPRig(t, cfg, 1<<20), newOTLPRig(t, cfg, 1<<20)
		took := 0
		for _, body := range bodies {
			if wireVsPdata(t, a, b, body) {
				took++
			}
			a.now, b.now = a.now.Add(time.Second), b.now.Add(time.Second)
			a.o.release(false)
			b.o.release(false)
		}
		sameRows(t, a, b)
		t.Logf("window %v: the wire reader took %d of %d bodies", cfg.PairWindow, took, len(bodies))
		if took < len(bodies)/10 {
			t.Errorf("the wire reader took only %d of %d bodies", took, len(bodies))
		}
	}
}

// FuzzOTLPWire compares the wire reader with pdata on any body: the
// receiver must answer and queue exactly what pdata's path does, and never
// read a body pdata rejects.
func FuzzOTLPWire(f *testing.F) {
	for _, name := range fixtureNames(f) {
		f.Add(protoOf(f, readFixture(f, name+".json")))
	}
	// A few generator calls, as bench/ingestbench sends them and
	// rearranged: small bodies, so that minimizing one stays quick.
	rng := rand.New(rand.NewPCG(3, 4))
	lines := generatorLines(f, 40)
	for i := 0; i+4 <= len(lines); i += 4 {
		td := ptrace.NewTraces()
		for j, l := range lines[i : i+4] {
			if err := benchSpan(td, l, uint64(i+j+1)); err != nil {
				f.Fatal(err)
			}
		}
		f.Add(marshalTraces(f, td))
		rearrange(rng, td)
		f.Add(marshalTraces(f, td))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		cfg := OTLPConfig{MaxSpans: 64, MaxAttributeBytes: 4 << 10, PairWindow: time.Second}
		a, b := newOTLPRig(t, cfg, 1<<16), newOTLPRig(t, cfg, 1<<16)
		wireVsPdata(t, a, b, body)
		sameRows(t, a, b)
	})
}

// tracesProto is Processor.Traces of a protobuf body as the HTTP receiver
// decodes it: with the wire reader, else with pdata.
func tracesProto(p *Processor, w *wireTraces, body []byte, cfg OTLPConfig, now time.Time) (calls []Call, dead []DeadLetter, rejected int, msg string) {
	if w.read(body) {
		d := &traceDecoder{p: p, cfg: cfg.withDefaults(), now: now, borrowed: true}
		if facts, dead, st, ok := d.decodeViews(w.views, nil); ok {
			for _, f := range pairInRequest(facts, nil) {
				c, err := d.build(&f, nil)
				if err != nil {
					d.rejectFacts(&st, &dead, &f, err)
					continue
				}
				calls = append(calls, c)
			}
			return calls, dead, st.rejected, st.message(d.cfg)
		}
	}
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(body); err != nil {
		return nil, nil, 0, err.Error()
	}
	return p.Traces(req.Traces(), cfg, now)
}

// TestOTLPTracesProtoMatchesTraces checks tracesProto, which
// BenchmarkDecodeOTLPWire times, against Processor.Traces on the corpus.
func TestOTLPTracesProtoMatchesTraces(t *testing.T) {
	p := testProcessor()
	var w wireTraces
	for i, body := range otlpCorpus(t, 500) {
		got := fmt.Sprint(tracesProto(p, &w, body, OTLPConfig{MaxSpans: 30}, testNow()))
		want := "unmarshal"
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err == nil {
			want = fmt.Sprint(p.Traces(req.Traces(), OTLPConfig{MaxSpans: 30}, testNow()))
		} else {
			got = "unmarshal"
		}
		if got != want {
			t.Fatalf("body %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// FuzzParsedValid checks parsedValid against validJSON on what
// jsonObj.parse accepts.
func FuzzParsedValid(f *testing.F) {
	for _, s := range []string{`{}`, " {\"a\":1}\n", "\u00a0{}", "{}\u0085", "\t{\"content\":[]} \r", `{"a":"\u00a0"}`, "\v{}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var o jsonObj
		if o.parse(s) && parsedValid(s) != validJSON(s) {
			t.Fatalf("parsedValid(%q) = %v, validJSON %v", s, parsedValid(s), validJSON(s))
		}
	})
}

// TestAppendTimeMillis compares appendTimeMillis with time's AppendFormat
// at the edges of its range, around leap days and year ends, and at
// random instants.
func TestAppendTimeMillis(t *testing.T) {
	ms := []int64{-1, 0, 1, 999, 1000, 86399999, 86400000, maxTimeMs - 1, maxTimeMs, 1 << 50}
	for y := 1970; y <= 2106; y++ {
		for _, at := range []time.Time{time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(y, 3, 1, 0, 0, 0, 0, time.UTC)} {
			ms = append(ms, at.UnixMilli()-1, at.UnixMilli())
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		ms = append(ms, rng.Int64N(maxTimeMs))
	}
	for _, m := range ms {
		checkTimeMillis(t, m)
	}
}

func checkTimeMillis(t *testing.T, ms int64) {
	t.Helper()
	want := time.UnixMilli(ms).UTC().AppendFormat(nil, "2006-01-02T15:04:05.000Z07:00")
	if got := appendTimeMillis([]byte("x"), ms); string(got) != "x"+string(want) {
		t.Fatalf("appendTimeMillis(%d) = %s, want %s", ms, got[1:], want)
	}
}

func FuzzAppendTimeMillis(f *testing.F) {
	f.Add(int64(0))
	f.Add(int64(maxTimeMs - 1))
	f.Add(int64(951782400000)) // 2000-02-29
	f.Fuzz(func(t *testing.T, ms int64) { checkTimeMillis(t, ms) })
}
