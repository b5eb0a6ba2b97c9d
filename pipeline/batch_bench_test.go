package pipeline_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/pipeline"
)

// discardInserter counts the calls it is given and keeps none; it does
// not decode them, as the Writer does.
type discardInserter struct{ calls atomic.Int64 }

func (d *discardInserter) WriteBatch(_ context.Context, calls *pipeline.Batch) error {
	d.calls.Add(int64(calls.Len()))
	return nil
}

func (d *discardInserter) WriteDeadLetters(context.Context, []pipeline.DeadLetter) error { return nil }

// BenchmarkBatchAppend is the batcher alone, with cmd/ingest's default
// sizes: Add of request-sized slices of 1000 realistic calls while Run
// flushes batches into an Inserter that keeps nothing. ns/call is the cost
// of queueing and batching one call; a full queue waits for the flusher.
func BenchmarkBatchAppend(b *testing.B) {
	calls := generatedCalls(b, 1000)
	ins := &discardInserter{}
	m := pipeline.NewMetrics(prometheus.NewRegistry())
	batcher := pipeline.NewBatcher(ins, pipeline.BatchConfig{BatchSize: 100000, FlushEvery: time.Second, QueueCapacity: 300000, Inserts: 2},
		m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = batcher.Run(ctx) }()
	b.ReportAllocs()
	for b.Loop() {
		for batcher.Add(calls, nil) != nil {
			time.Sleep(10 * time.Microsecond) // queue full: the flusher catches up
		}
	}
	b.StopTimer()
	cancel()
	<-done
	if err := batcher.Drain(context.Background()); err != nil {
		b.Fatal(err)
	}
	if got, want := ins.calls.Load(), int64(b.N*len(calls)); got != want {
		b.Fatalf("inserted %d calls, want %d", got, want)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(calls)), "ns/call")
}

// BenchmarkSortOrder is the cost WriteBatch pays to send a batch of 50,000
// generated calls in the calls table's key order: reading each call's key
// from its record, and sorting; ns/call is per call.
func BenchmarkSortOrder(b *testing.B) {
	calls := generatedCalls(b, 50000)
	batch := pipeline.BatchOf(calls)
	b.ReportAllocs()
	for b.Loop() {
		pipeline.SortOrder(batch)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(calls)), "ns/call")
}

// BenchmarkRecordDecode is the decoding WriteBatch does before it hands
// calls to the driver: every call of a 10,000-call batch (one INSERT block)
// read from its queued record into one reused Call whose strings view the
// record; ns/call is per call.
func BenchmarkRecordDecode(b *testing.B) {
	calls := generatedCalls(b, 10000)
	batch := pipeline.BatchOf(calls)
	b.ReportAllocs()
	for b.Loop() {
		if n, err := pipeline.DecodeEach(batch); err != nil || n != len(calls) {
			b.Fatalf("decoded %d of %d calls: %v", n, len(calls), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(calls)), "ns/call")
}
