package pipeline_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/traffic"
)

// generatedLines returns the first n capture lines of the traffic
// generator: its mix of successes, failures and SDK wire habits, about
// 850 B a line.
func generatedLines(tb testing.TB, n int) [][]byte {
	tb.Helper()
	var lines [][]byte
	stop := errors.New("enough")
	err := traffic.Generate(traffic.Config{Seed: 8, Sessions: n/5 + 10}, func(line []byte) error {
		lines = append(lines, bytes.Clone(line))
		if len(lines) == n {
			return stop
		}
		return nil
	})
	if err != nil && !errors.Is(err, stop) || len(lines) < n {
		tb.Fatalf("generate %d lines: got %d, %v", n, len(lines), err)
	}
	return lines
}

// BenchmarkProcessorLine is decode, normalize and classify of one capture
// line (Processor.Line) over the generator's mix; ns/op is the pipeline's
// CPU cost per call before batching.
func BenchmarkProcessorLine(b *testing.B) {
	benchLines(b, &pipeline.Processor{Classifier: classify.Default()}, generatedLines(b, 5000))
}

// stdlibCapture is a capture line as a program without mcplens would read
// it with encoding/json: the envelope, the request's name and arguments,
// and the response's result or error, nothing canonicalized, hashed,
// redacted or classified.
type stdlibCapture struct {
	Time            string  `json:"time"`
	DurationMs      float64 `json:"duration_ms"`
	Tenant          string  `json:"tenant"`
	Server          string  `json:"server"`
	SessionID       string  `json:"session_id"`
	Client          string  `json:"client"`
	ProtocolVersion string  `json:"protocol_version"`
	Request         struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string `json:"name"`
			Arguments any    `json:"arguments"`
		} `json:"params"`
	} `json:"request"`
	Response struct {
		ID     json.RawMessage `json:"id"`
		Result *struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent any  `json:"structuredContent"`
			IsError           bool `json:"isError"`
		} `json:"result"`
		Error *struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	} `json:"response"`
}

// BenchmarkProcessorLineVsStdlib times, call by call in turn over the
// generator's mix, Processor.Line (decode, normalize, classify) and a
// plain encoding/json.Unmarshal of the same line into stdlibCapture: the
// ratio says what the pipeline costs in units of the standard library's
// parse alone on the machine at hand, which absolute nanoseconds on a
// shared 2-core VM do not (BENCHMARKS.md, Pipeline stages).
func BenchmarkProcessorLineVsStdlib(b *testing.B) {
	lines := generatedLines(b, 5000)
	p := &pipeline.Processor{Classifier: classify.Default()}
	var ours, std time.Duration
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		line := lines[i%len(lines)]
		t0 := time.Now()
		if _, err := p.Line(line); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		var c stdlibCapture
		if err := json.Unmarshal(line, &c); err != nil {
			b.Fatal(err)
		}
		std += time.Since(t1)
		ours += t1.Sub(t0)
	}
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "pipeline-ns/call")
	b.ReportMetric(float64(std.Nanoseconds())/float64(b.N), "json-ns/call")
	b.ReportMetric(float64(ours)/float64(std), "pipeline/json")
}

// BenchmarkProcessorReadNDJSON is what the POST /v1/calls handler does with
// a body of 1000 lines after reading it: split the lines, Processor.Line
// each, collect the calls. ns/call includes the line splitting.
func BenchmarkProcessorReadNDJSON(b *testing.B) {
	lines := generatedLines(b, 1000)
	body := append(bytes.Join(lines, []byte("\n")), '\n')
	p := &pipeline.Processor{Classifier: classify.Default()}
	now := time.Now()
	calls := make([]pipeline.Call, 0, len(lines))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		calls = calls[:0]
		res, err := p.ReadNDJSON(bytes.NewReader(body), "default", now,
			func(c pipeline.Call) { calls = append(calls, c) },
			func(pipeline.DeadLetter) {})
		if err != nil || res.Accepted != len(lines) {
			b.Fatalf("accepted %d of %d: %v", res.Accepted, len(lines), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/call")
}

// generatedCalls returns n calls decoded from the traffic generator's lines.
func generatedCalls(tb testing.TB, n int) []pipeline.Call {
	tb.Helper()
	p := &pipeline.Processor{Classifier: classify.Default()}
	var calls []pipeline.Call
	for _, l := range generatedLines(tb, n) {
		c, err := p.Line(l)
		if err != nil {
			tb.Fatal(err)
		}
		calls = append(calls, c)
	}
	return calls
}

// BenchmarkProcessorLineValidated is BenchmarkProcessorLine with the
// fleet's tool definitions known (traffic.ToolsList), so that every call is
// also validated against its tool's input and output schemas and its
// violation rows queued (dropped and counted once the queue is full, as
// nothing flushes it here).
func BenchmarkProcessorLineValidated(b *testing.B) {
	lines := generatedLines(b, 5000)
	p := &pipeline.Processor{Classifier: classify.Default()}
	p.Tools = pipeline.NewTools(nil, nil, pipeline.ToolsConfig{}, prometheus.NewRegistry(), nil)
	err := traffic.ToolsList(traffic.Config{}, func(line []byte) error {
		defs, err := pipeline.DecodeToolsList(line, &p.Decode)
		if err != nil {
			return err
		}
		p.Tools.Observe(defs, pipeline.ToolSourceCapture)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	benchLines(b, p, lines)
}

// benchLines times p.Line over lines, round and round.
func benchLines(b *testing.B, p *pipeline.Processor, lines [][]byte) {
	var size int64
	for _, l := range lines {
		size += int64(len(l))
	}
	b.SetBytes(size / int64(len(lines)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := p.Line(lines[i%len(lines)]); err != nil {
			b.Fatal(err)
		}
	}
}
