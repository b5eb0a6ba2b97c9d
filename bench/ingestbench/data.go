package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/traffic"
)

// payload is one encoding of the benchmark's calls, cut into request bodies.
type payload struct {
	name        string   // "ndjson", "ndjson+gzip", "ndjson+tools", "otlp", "otlp+gzip", "otlp+tools", "otlp-linked", "otlp-both"
	path        string   // "/v1/calls" or "/v1/traces"
	contentType string   // of each body
	gzip        bool     // bodies are gzip-compressed (Content-Encoding: gzip)
	bodies      [][]byte // as sent
	calls       []int    // calls in each body; spans when perCall > 1
	// perCall is the spans each call is exported as (0: one). A payload of
	// both sides ends with one row of side "both" per call, which is what
	// a run waits for; before that, each call may also be a row of the
	// side that came first, which FINAL replaces.
	perCall int
	// setup is posted once, before the timed run, to /v1/calls: the
	// tools/list capture lines of the fleet, so that ingest validates every
	// call against its tool's schema and writes call_violations. nil: none.
	setup     []byte
	wireBytes int64 // sum of len(bodies)
	rawBytes  int64 // the same bodies before compression
}

// dataset holds every form of the same calls: the capture lines posted to
// ingest, the OTLP spans of the same calls, and the rows they normalize to
// as a JSONEachRow file for clickhouse-client.
type dataset struct {
	lines    int   // capture lines generated
	calls    int   // lines that Processor.Line accepts: the rows every run must end with
	ndjson   int64 // bytes of the capture lines, newlines included
	payloads []*payload
	jsonRows string // path of the JSONEachRow file of the normalized rows
	rowBytes int64  // its size
}

var errEnough = errors.New("enough lines")

// prepare generates n capture lines of the traffic generator's mix, cuts
// them into bodies of perBody lines, encodes the same calls as OTLP, and
// writes the rows Processor.Line makes of them to dir/calls.jsonl.
func prepare(n, perBody int, dir string) (*dataset, error) {
	var lines [][]byte
	cfg := traffic.Config{Seed: 8, Sessions: n/5 + 10, Duration: 4 * time.Hour}
	err := traffic.Generate(cfg, func(line []byte) error {
		lines = append(lines, bytes.Clone(line))
		if len(lines) == n {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return nil, fmt.Errorf("generate traffic: %w", err)
	}
	if len(lines) < n {
		return nil, fmt.Errorf("generate traffic: %d lines, want %d", len(lines), n)
	}
	d := &dataset{lines: len(lines)}
	nd := &payload{name: "ndjson", path: "/v1/calls", contentType: "application/x-ndjson"}
	for i := 0; i < len(lines); i += perBody {
		var b bytes.Buffer
		chunk := lines[i:min(i+perBody, len(lines))]
		for _, l := range chunk {
			b.Write(l)
			b.WriteByte('\n')
		}
		nd.bodies = append(nd.bodies, b.Bytes())
		nd.calls = append(nd.calls, len(chunk))
		nd.rawBytes += int64(b.Len())
	}
	nd.wireBytes = nd.rawBytes
	d.ndjson = nd.rawBytes
	// The same bodies after the fleet's tools/list lines: every call
	// validated, as a fleet whose captures include its tool definitions is.
	validated := *nd
	validated.name = "ndjson+tools"
	var tools bytes.Buffer
	if err := traffic.ToolsList(cfg, func(line []byte) error {
		tools.Write(line)
		tools.WriteByte('\n')
		return nil
	}); err != nil {
		return nil, fmt.Errorf("tools/list lines: %w", err)
	}
	validated.setup = tools.Bytes()

	ot, err := otlpPayload("otlp", lines, perBody, false)
	if err != nil {
		return nil, err
	}
	linked, err := otlpPayload("otlp-linked", lines, perBody, true)
	if err != nil {
		return nil, err
	}
	both, err := otlpBothPayload(lines, perBody)
	if err != nil {
		return nil, err
	}
	otValidated := *ot // the same spans after the same tools/list lines
	otValidated.name, otValidated.setup = "otlp+tools", validated.setup
	d.payloads = []*payload{nd, gzipped(nd), &validated, ot, gzipped(ot), &otValidated, linked, both}

	d.jsonRows = dir + "/calls.jsonl"
	d.calls, d.rowBytes, err = writeRows(lines, d.jsonRows)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// gzipped returns p with every body gzip-compressed, as a client with
// compression on sends it.
func gzipped(p *payload) *payload {
	g := &payload{name: p.name + "+gzip", path: p.path, contentType: p.contentType, gzip: true,
		calls: p.calls, perCall: p.perCall, rawBytes: p.rawBytes}
	for _, b := range p.bodies {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b) //nolint:errcheck // a bytes.Buffer does not fail
		zw.Close()  //nolint:errcheck // a bytes.Buffer does not fail
		g.bodies = append(g.bodies, buf.Bytes())
		g.wireBytes += int64(buf.Len())
	}
	return g
}

// newProcessor is the decode and classify stage with the defaults of
// cmd/ingest (built-in rules, default redaction).
func newProcessor() *pipeline.Processor {
	return &pipeline.Processor{Classifier: classify.Default()}
}

// writeRows normalizes lines with Processor.Line, as ingest does, and writes
// the rows as JSONEachRow with the column names of the calls table: what a
// user without mcplens would load with clickhouse-client.
func writeRows(lines [][]byte, path string) (rows int, size int64, err error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	p := newProcessor()
	cols := pipeline.CallColumns()
	var b []byte
	for i, l := range lines {
		c, err := p.Line(l)
		if errors.Is(err, pipeline.ErrSkip) {
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("line %d: %w", i+1, err)
		}
		b = appendRow(b[:0], cols, c.Values())
		if _, err := w.Write(b); err != nil {
			return 0, 0, err
		}
		rows++
		size += int64(len(b))
	}
	if err := w.Flush(); err != nil {
		return 0, 0, err
	}
	return rows, size, f.Close()
}

// appendRow appends one JSONEachRow line.
func appendRow(b []byte, cols []string, vals []any) []byte {
	b = append(b, '{')
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, cols[i])
		b = append(b, ':')
		switch x := v.(type) {
		case time.Time:
			b = append(b, '"')
			b = x.UTC().AppendFormat(b, "2006-01-02 15:04:05")
			b = append(b, '"')
		case string:
			b = appendJSONString(b, x)
		case []string:
			b = append(b, '[')
			for j, s := range x {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendJSONString(b, s)
			}
			b = append(b, ']')
		case int64:
			b = strconv.AppendInt(b, x, 10)
		case int32:
			b = strconv.AppendInt(b, int64(x), 10)
		case int8:
			b = strconv.AppendInt(b, int64(x), 10)
		case uint64:
			b = strconv.AppendUint(b, x, 10)
		case uint32:
			b = strconv.AppendUint(b, uint64(x), 10)
		case uint8:
			b = strconv.AppendUint(b, uint64(x), 10)
		default:
			j, _ := json.Marshal(x)
			b = append(b, j...)
		}
	}
	return append(b, '}', '\n')
}

func appendJSONString(b []byte, s string) []byte {
	j, _ := json.Marshal(s) // a string always marshals
	return append(b, j...)
}

// otlpPayload is lines as OTLP/HTTP protobuf bodies of perBody server spans
// each (traffic.AppendServerSpan); with linked, every span has a parent
// (its client's span), so that ingest remembers it for pairing, as it does
// for real instrumentations that propagate trace context.
func otlpPayload(name string, lines [][]byte, perBody int, linked bool) (*payload, error) {
	ot := &payload{name: name, path: "/v1/traces", contentType: "application/x-protobuf"}
	spanID := uint64(0)
	for i := 0; i < len(lines); i += perBody {
		td := ptrace.NewTraces()
		spans := 0
		for _, l := range lines[i:min(i+perBody, len(lines))] {
			spanID++
			ok, err := traffic.AppendServerSpan(td, l, spanID, linked)
			if err != nil {
				return nil, err
			}
			if ok {
				spans++
			}
		}
		if err := ot.addTraces(td, spans); err != nil {
			return nil, err
		}
	}
	ot.wireBytes = ot.rawBytes
	return ot, nil
}

// otlpBothPayload is lines exported by both sides, as by a client and a
// server that are both instrumented: body k holds the client spans of the
// k-th chunk of perBody lines (traffic.AppendClientSpan) and the server
// spans of the chunk before it (traffic.AppendServerSpan with a parent),
// and one more body the server spans of the last chunk. Each side of a
// call thus arrives in another request, as from two exporters, and ingest
// pairs them across requests: with the default -otlp-pair-window of 0 it
// stores the client's side alone, remembers it, and writes the merged row
// under the same identity when the server's side comes (docs/otel.md).
func otlpBothPayload(lines [][]byte, perBody int) (*payload, error) {
	p := &payload{name: "otlp-both", path: "/v1/traces", contentType: "application/x-protobuf", perCall: 2}
	var prev [][]byte
	var prevID uint64
	id := uint64(0)
	for i := 0; i < len(lines) || len(prev) > 0; i += perBody {
		chunk := lines[min(i, len(lines)):min(i+perBody, len(lines))]
		td := ptrace.NewTraces()
		spans := 0
		for j, l := range chunk {
			ok, err := traffic.AppendClientSpan(td, l, id+uint64(j)+1)
			if err != nil {
				return nil, err
			}
			if ok {
				spans++
			}
		}
		for j, l := range prev {
			ok, err := traffic.AppendServerSpan(td, l, prevID+uint64(j)+1, true)
			if err != nil {
				return nil, err
			}
			if ok {
				spans++
			}
		}
		prev, prevID = chunk, id
		id += uint64(len(chunk))
		if spans == 0 {
			continue
		}
		if err := p.addTraces(td, spans); err != nil {
			return nil, err
		}
	}
	p.wireBytes = p.rawBytes
	return p, nil
}

// addTraces appends td as one OTLP/HTTP protobuf body of n spans.
func (p *payload) addTraces(td ptrace.Traces, n int) error {
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		return fmt.Errorf("marshal OTLP request: %w", err)
	}
	p.bodies = append(p.bodies, body)
	p.calls = append(p.calls, n)
	p.rawBytes += int64(len(body))
	return nil
}
