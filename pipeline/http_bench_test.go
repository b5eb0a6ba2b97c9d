package pipeline_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
)

// BenchmarkIngestRequest is the NDJSON receiver without the network: a
// 1,000-line body of generated calls handed to Ingest.ServeHTTP, decoded,
// classified, written to an on-disk spool (-spool-fsync=never) and queued
// in a Batcher with cmd/ingest's sizes that flushes into an Inserter that
// keeps nothing. ns/call and B/call are per call: everything a call costs
// in ingest before the INSERT.
func BenchmarkIngestRequest(b *testing.B) {
	body := bytes.Join(generatedLines(b, 1000), []byte("\n"))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := pipeline.NewMetrics(prometheus.NewRegistry())
	sp, err := pipeline.OpenSpool(pipeline.SpoolConfig{Dir: b.TempDir(), Fsync: pipeline.FsyncNever, MaxBytes: 1 << 40}, m, log)
	if err != nil {
		b.Fatal(err)
	}
	defer sp.Close()
	batcher := pipeline.NewSpooledBatcher(&discardInserter{}, sp,
		pipeline.BatchConfig{BatchSize: 100000, FlushEvery: time.Second, QueueCapacity: 300000, Inserts: 2}, m, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = batcher.Run(ctx) }()
	h := pipeline.NewIngest(&pipeline.Processor{Classifier: classify.Default()}, batcher, m, pipeline.HTTPConfig{}, log)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		for {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/calls", bytes.NewReader(body)))
			if rec.Code == http.StatusOK {
				break
			}
			if rec.Code != http.StatusServiceUnavailable {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			time.Sleep(100 * time.Microsecond) // queue full: the flusher catches up
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/call")
	cancel()
	<-done
	if err := batcher.Drain(context.Background()); err != nil {
		b.Fatal(err)
	}
}
