package pipeline

import (
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/mcplens/mcplens/pipeline/classify"
)

// viaLine is what build did before decodeFacts: the capture line of f,
// decoded by DecodeCapture with no line limit.
func viaLine(d *traceDecoder, f *spanFacts) (Call, classify.Input, error) {
	opts := *d.options()
	line := d.line(f)
	opts.MaxLineBytes = max(opts.MaxLineBytes, len(line))
	c, in, err := DecodeCapture(line, &opts)
	return c, in, err
}

// sameAsLine fails t unless decodeFacts returns for f what DecodeCapture
// returns for f's capture line: the same Call and Input, or the same error.
func sameAsLine(t *testing.T, d *traceDecoder, f *spanFacts) {
	t.Helper()
	want, wantIn, wantErr := viaLine(d, f)
	line := string(d.buf)
	var buf []byte
	got, gotIn, gotErr := decodeFacts(f, d.options(), d.lim, &buf)
	switch {
	case (gotErr == nil) != (wantErr == nil):
		t.Fatalf("span %d: error %v, the capture line's %v\nline %s", f.index, gotErr, wantErr, line)
	case gotErr != nil:
		// The line's JSON errors count bytes of the line, ours of the value.
		if g, w := gotErr.Error(), wantErr.Error(); g != w && !(strings.Contains(g, "invalid JSON at byte") && strings.Contains(w, "invalid JSON at byte")) {
			t.Fatalf("span %d: error %q, the capture line's %q\nline %s", f.index, g, w, line)
		}
	case !reflect.DeepEqual(got, want):
		t.Fatalf("span %d: call\n%+v\nthe capture line's\n%+v\nline %s", f.index, got, want, line)
	case !reflect.DeepEqual(gotIn, wantIn):
		t.Fatalf("span %d: input\n%+v\nthe capture line's\n%+v\nline %s", f.index, gotIn, wantIn, line)
	}
}

// corpusFacts returns the facts of every span of the OTLP corpus, as the
// wire reader and pdata read them, and the calls paired in their request.
func corpusFacts(t testing.TB, d *traceDecoder, mutations int) []spanFacts {
	var all []spanFacts
	var w wireTraces
	for _, body := range otlpCorpus(t, mutations) {
		if w.read(body) {
			d.borrowed = true
			if facts, _, _, ok := d.decodeViews(w.views, nil); ok {
				for i := range facts {
					pf := pack(&facts[i])
					facts[i] = pf.unpack()
				}
				all = append(all, facts...)
				all = append(all, pairInRequest(facts, nil)...)
			}
			d.borrowed = false
		}
		req := ptraceotlp.NewExportRequest()
		if req.UnmarshalProto(body) != nil {
			continue
		}
		facts, _, _ := d.decodeTraces(req.Traces(), nil)
		all = append(all, facts...)
		all = append(all, pairInRequest(facts, nil)...)
	}
	return all
}

// TestDecodeFactsIsTheCaptureLine checks decodeFacts against the capture
// line of every span of the OTLP corpus, and of each such span made odd:
// invalid UTF-8 in every name, times out of range, arguments nested past
// the limit, names over their limits, an empty tool name, results that are
// not objects, long error messages.
func TestDecodeFactsIsTheCaptureLine(t *testing.T) {
	d := &traceDecoder{p: testProcessor(), cfg: OTLPConfig{}.withDefaults(), now: testNow()}
	facts := corpusFacts(t, d, 300)
	if len(facts) < 1000 {
		t.Fatalf("only %d facts in the corpus", len(facts))
	}
	// The line nests the arguments' members 4 deep and a text block's
	// text 5 deep: each pair of cases ends at the limit (64) and one past.
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	text := func(v string) string { return `{"content":[{"type":"text","text":` + v + `}]}` }
	odd := []func(f *spanFacts){
		func(f *spanFacts) {
			f.tenant, f.server, f.tool = "t\xffe", "s\xc3\\", "tool\x80\\\x80\\u00e9"
			f.session, f.client, f.proto, f.reqID = "s\xfe", "\xe2\x82", "2025\xff", "id\xff"
		},
		func(f *spanFacts) { f.timeMs = -1 },
		func(f *spanFacts) { f.timeMs = maxTimeMs },
		func(f *spanFacts) { f.timeMs = maxTimeMs - 1 },
		func(f *spanFacts) { f.args, f.argsKind = `{"a":`+nest(60)+`}`, argsJSON },
		func(f *spanFacts) { f.args, f.argsKind = `{"a":`+nest(61)+`}`, argsJSON },
		func(f *spanFacts) { f.args, f.argsKind = " \n{\"b\":[1,2.50,\"\\u00e9\"],\"a\":null}\t", argsJSON },
		func(f *spanFacts) { f.tenant = strings.Repeat("t", maxNameBytes+1) },
		func(f *spanFacts) { f.reqID = strings.Repeat("r", maxIDBytes+1) },
		func(f *spanFacts) { f.tool = "" },
		func(f *spanFacts) { f.result, f.rpcErr, f.noResp = "[1]", false, false },
		func(f *spanFacts) { f.result, f.rpcErr, f.noResp = text(nest(59)), false, false },
		func(f *spanFacts) { f.result, f.rpcErr, f.noResp = text(nest(60)), false, false },
		func(f *spanFacts) { f.result, f.rpcErr, f.noResp = " "+text(`"x\ud800"`)+"\n", false, false },
		func(f *spanFacts) {
			f.rpcErr, f.noResp, f.rpcCode, f.rpcMsg = true, false, -32602, strings.Repeat("é", classifierTextBytes)
		},
		func(f *spanFacts) {
			f.result, f.rpcErr, f.noResp = "", false, false
			f.isError, f.texts = 1, []string{"rate \x00limit\xff", strings.Repeat("x", 5000)}
		},
		func(f *spanFacts) { f.noResp, f.localErr = true, "connection reset\xff\n" },
	}
	for i := range facts {
		sameAsLine(t, d, &facts[i])
		g := facts[i]
		odd[i%len(odd)](&g)
		sameAsLine(t, d, &g)
	}
}

// FuzzDecodeFacts holds decodeFacts equal to the capture line's decoding
// for facts of any content, kept within what the span decoder produces:
// JSON arguments and results are valid JSON.
func FuzzDecodeFacts(f *testing.F) {
	d := &traceDecoder{p: testProcessor(), cfg: OTLPConfig{}.withDefaults(), now: testNow()}
	for i, g := range corpusFacts(f, d, 0) {
		if i%25 != 0 {
			continue
		}
		var t1 string
		if len(g.texts) > 0 {
			t1 = g.texts[0]
		}
		f.Add(g.timeMs, g.durMs, g.tenant, g.server, g.session, g.client, g.proto, g.reqID, g.tool,
			g.args, g.argsKind, g.result, g.rpcErr, g.rpcCode, g.rpcMsg, g.isError, t1, g.noResp, g.localErr, g.trace[:])
	}
	f.Fuzz(func(t *testing.T, timeMs, durMs int64, tenant, server, session, client, proto, reqID, tool,
		args string, argsKind uint8, result string, rpcErr bool, rpcCode int64, rpcMsg string, isError int8,
		text string, noResp bool, localErr string, trace []byte) {
		g := spanFacts{spanScalars: spanScalars{index: 1, timeMs: timeMs, durMs: durMs, noResp: noResp, rpcErr: rpcErr,
			rpcCode: rpcCode, isError: max(min(isError, 1), -1)}, tenant: tenant, server: server, session: session,
			client: client, proto: proto, reqID: reqID, tool: tool, localErr: localErr, rpcMsg: rpcMsg}
		copy(g.trace[:], trace)
		if argsKind == argsJSON && validJSON(args) {
			g.args, g.argsKind = args, argsJSON
		}
		if validJSON(result) {
			g.result = result
		}
		if text != "" {
			g.texts = []string{text, text}
		}
		sameAsLine(t, d, &g)
	})
}
