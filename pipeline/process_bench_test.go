package pipeline_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

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
	lines := generatedLines(b, 5000)
	var size int64
	for _, l := range lines {
		size += int64(len(l))
	}
	p := &pipeline.Processor{Classifier: classify.Default()}
	b.SetBytes(size / int64(len(lines)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := p.Line(lines[i%len(lines)]); err != nil {
			b.Fatal(err)
		}
	}
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
