package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/schema"
)

// TestWriterSendsBlocksIntoOnePartAndARetryCollapses runs WriteCalls on the
// ClickHouse 18.16 server with blocks of 7 rows: an INSERT of 100 calls in
// one partition must make one part holding all of them (the server squashes
// the blocks), and an INSERT that fails after blocks were sent must leave
// one row per call once the Batcher's retry has run.
func TestWriterSendsBlocksIntoOnePartAndARetryCollapses(t *testing.T) {
	ctx := context.Background()
	srv, err := chtest.StartServer(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	admin, err := chtest.Open(srv.Addr, "default")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.Exec(ctx, "CREATE DATABASE w"); err != nil {
		t.Fatal(err)
	}
	conn, err := chtest.Open(srv.Addr, "w")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := schema.Apply(ctx, conn); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	calls := make([]pipeline.Call, 100)
	for i := range calls {
		ts := day.Add(time.Duration(i) * time.Second)
		calls[i] = pipeline.Call{Time: ts, TimeMs: ts.UnixMilli(), Tenant: "t", Server: "s", Tool: "x", SessionKey: "k",
			RequestID: fmt.Sprint(i), CallID: uint64(i + 1), ArgKeys: []string{}, ArgValues: []string{}, IngestedMs: 1}
	}
	count := func() (rows, parts uint64) {
		t.Helper()
		var n []struct {
			Rows  uint64 `ch:"rows"`
			Parts uint64 `ch:"parts"`
		}
		if err := admin.Select(ctx, &n, "SELECT sum(rows) AS rows, count() AS parts FROM system.parts WHERE database = 'w' AND table = 'calls' AND active"); err != nil {
			t.Fatal(err)
		}
		return n[0].Rows, n[0].Parts
	}

	if err := admin.Exec(ctx, "SYSTEM STOP MERGES w.calls"); err != nil {
		t.Fatal(err)
	}
	w := pipeline.NewWriter(conn, pipeline.NewMetrics(prometheus.NewRegistry()))
	blocks := 0
	pipeline.SetWriterBlocks(w, 7, func(int) error { blocks++; return nil })
	if err := w.WriteCalls(ctx, calls); err != nil {
		t.Fatal(err)
	}
	if rows, parts := count(); rows != 100 || parts != 1 || blocks != 14 {
		t.Fatalf("after one INSERT of 100 calls in blocks of 7: %d rows in %d parts, %d blocks flushed; want 100 rows in 1 part, 14 blocks", rows, parts, blocks)
	}

	// An INSERT that fails after blocks were sent drops its connection.
	// ClickHouse 18.16 then keeps the blocks it had (21 rows here); the
	// Batcher sends the whole batch again, and the copies collapse into one
	// row per call.
	boom := errors.New("boom")
	pipeline.SetWriterBlocks(w, 7, func(sent int) error {
		if sent >= 21 {
			return boom
		}
		return nil
	})
	for i := range calls {
		calls[i].IngestedMs = 2
	}
	if err := w.WriteCalls(ctx, calls); !errors.Is(err, boom) {
		t.Fatalf("WriteCalls: %v, want the hook's error", err)
	}
	pipeline.SetWriterBlocks(w, 7, nil)
	if err := w.WriteCalls(ctx, calls); err != nil {
		t.Fatal(err)
	}
	var final []struct {
		N uint64 `ch:"n"`
		V int64  `ch:"v"`
	}
	if err := admin.Select(ctx, &final, "SELECT count() AS n, min(ingested_ms) AS v FROM w.calls FINAL"); err != nil {
		t.Fatal(err)
	}
	if final[0].N != 100 || final[0].V != 2 {
		t.Fatalf("after a failed INSERT and its retry: %d calls, oldest version %d; want 100 calls, all of the retry", final[0].N, final[0].V)
	}
	// The pool still works after the dropped connection.
	pipeline.SetWriterBlocks(w, pipeline.DefaultBlockRows, nil)
	if err := w.WriteCalls(ctx, calls[:3]); err != nil {
		t.Fatal(err)
	}
	if rows, _ := count(); rows < 203 {
		t.Fatalf("%d rows after a last insert of 3, want at least 203", rows)
	}
}
