package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/chconn"
	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/schema"
)

// writerDB starts a ClickHouse 18.16 server with the mcplens schema in
// database db and returns a connection to it and an admin connection.
func writerDB(tb testing.TB, db string) (conn, admin driver.Conn) {
	tb.Helper()
	ctx := context.Background()
	srv, err := chtest.StartServer(ctx, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Stop)
	if admin, err = chtest.Open(srv.Addr, "default"); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { admin.Close() })
	if err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		tb.Fatal(err)
	}
	if conn, err = chtest.Open(srv.Addr, db); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	if _, err := schema.Apply(ctx, conn); err != nil {
		tb.Fatal(err)
	}
	return conn, admin
}

// TestWriterStoresEveryColumnAsGiven writes generated calls, and one with
// every number at its extreme, through WriteCalls and reads every column
// back: what is stored is Values of the call (ts to the second), whatever
// form the Writer hands the driver.
func TestWriterStoresEveryColumnAsGiven(t *testing.T) {
	ctx := context.Background()
	conn, admin := writerDB(t, "rt")
	calls := generatedCalls(t, 300)
	ts := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	calls = append(calls, pipeline.Call{Time: ts, TimeMs: math.MaxInt64, DurationMs: math.MinInt64, Tenant: "ténant", Server: "s\x00",
		Tool: "t", SessionKey: "k", CallID: math.MaxUint64, ArgsHash: math.MaxUint64, ArgKeys: []string{"a", ""}, ArgValues: []string{"\"", "é"},
		HasResponse: 255, IsError: -128, RPCError: 1, RPCCode: math.MinInt64, ContentBlocks: math.MinInt32, TextBytes: math.MaxInt64,
		DeclaredRetryable: 127, ExpectedRetryable: -1, RetryAfterMs: -1, Continuation: 1, IngestedMs: math.MaxInt64, Message: "x\ny"})
	for i := range calls {
		calls[i].CallID = uint64(i) // a row per call, in a known order
	}
	w := pipeline.NewWriter(conn, pipeline.NewMetrics(prometheus.NewRegistry()))
	if err := w.WriteCalls(ctx, calls); err != nil {
		t.Fatal(err)
	}
	cols := pipeline.CallColumns()
	rows, err := admin.Query(ctx, "SELECT "+strings.Join(cols, ", ")+" FROM rt.calls ORDER BY call_id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for ; rows.Next(); n++ {
		dest := make([]any, len(cols))
		for i, ct := range rows.ColumnTypes() {
			dest[i] = reflect.New(ct.ScanType()).Interface()
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		want := calls[n].Values()
		want[0] = calls[n].Time.Truncate(time.Second).UTC()
		for i, col := range cols {
			got := reflect.ValueOf(dest[i]).Elem().Interface()
			if tm, ok := got.(time.Time); ok {
				got = tm.UTC()
			}
			if !reflect.DeepEqual(got, want[i]) {
				t.Fatalf("call %d column %s: stored %#v, want %#v", n, col, got, want[i])
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(calls) {
		t.Fatalf("%d rows stored, want %d", n, len(calls))
	}
}

// BenchmarkWriteCalls inserts a Batch of 50,000 generated calls, encoded as
// the Batcher queues them, per op into ClickHouse 18.16, over a connection
// opened as cmd/ingest opens it with each -clickhouse-compression, and
// uncompressed in blocks of other sizes than DefaultBlockRows.
// client-µs/call is this process's CPU time (user + system) per call: the
// Writer's and the driver's share of ingest's CPU; server-µs/call is the
// server's over the same time (10 ms ticks), merges included.
func BenchmarkWriteCalls(b *testing.B) {
	ctx := context.Background()
	srv, err := chtest.StartServer(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	pid := srv.PID()
	if pid == 0 {
		b.Fatal("clickhouse-server's process not found")
	}
	batch := pipeline.BatchOf(generatedCalls(b, 50000))
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	type variant struct {
		compression string
		blockRows   int
	}
	variants := []variant{{"none", pipeline.DefaultBlockRows}, {"lz4", pipeline.DefaultBlockRows}, {"zstd", pipeline.DefaultBlockRows}}
	for _, n := range []int{250, 500, 1000, 2000, 4000, 10000} {
		if n != pipeline.DefaultBlockRows {
			variants = append(variants, variant{"none", n})
		}
	}
	for _, tc := range variants {
		b.Run(fmt.Sprintf("compression=%s/block=%d", tc.compression, tc.blockRows), func(b *testing.B) {
			db := fmt.Sprintf("wb_%s_%d", tc.compression, tc.blockRows)
			conn, err := chconn.Open(ctx, chconn.Config{Addr: srv.Addr, Database: db, User: "default", Compression: tc.compression}, true)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			if _, err := schema.Apply(ctx, conn); err != nil {
				b.Fatal(err)
			}
			w := pipeline.NewWriter(conn, pipeline.NewMetrics(prometheus.NewRegistry()))
			pipeline.SetWriterBlocks(w, tc.blockRows, nil)
			b.ReportAllocs()
			start, server := cpu(), chtest.ProcessCPU(pid)
			for b.Loop() {
				if err := w.WriteBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			calls := float64(b.N * batch.Len())
			b.ReportMetric(float64((cpu()-start).Microseconds())/calls, "client-µs/call")
			b.ReportMetric(float64((chtest.ProcessCPU(pid)-server).Microseconds())/calls, "server-µs/call")
		})
	}
}

// TestWriterSendsBlocksIntoOnePartAndARetryCollapses runs WriteCalls on the
// ClickHouse 18.16 server with blocks of 7 rows: an INSERT of 100 calls in
// one partition must make one part holding all of them (the server squashes
// the blocks), and an INSERT that fails after blocks were sent must leave
// one row per call once the Batcher's retry has run.
func TestWriterSendsBlocksIntoOnePartAndARetryCollapses(t *testing.T) {
	ctx := context.Background()
	conn, admin := writerDB(t, "w")
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

// TestWriterInsertsBatchesThatSpanRecords runs the Batcher into the Writer
// on ClickHouse 18.16 with batches (10 calls) and blocks (3 rows) that cut
// across the requests' records (7 calls each): every call is stored once,
// with its own arguments.
func TestWriterInsertsBatchesThatSpanRecords(t *testing.T) {
	ctx := context.Background()
	conn, admin := writerDB(t, "spans")
	m := pipeline.NewMetrics(prometheus.NewRegistry())
	w := pipeline.NewWriter(conn, m)
	pipeline.SetWriterBlocks(w, 3, nil)
	b := pipeline.NewBatcher(w, pipeline.BatchConfig{BatchSize: 10, QueueCapacity: 100, FlushEvery: time.Hour}, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	day := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	want := map[uint64]string{}
	for r := range 5 {
		calls := make([]pipeline.Call, 7)
		for i := range calls {
			id := uint64(100*r + i + 1)
			ts := day.Add(time.Duration(id) * time.Second)
			v := fmt.Sprint("finance-", id)
			// Sessions run against the order of the ids, so that the
			// INSERT's order differs from the batch's.
			calls[i] = pipeline.Call{Time: ts, TimeMs: ts.UnixMilli(), Tenant: "t", Server: "s", Tool: "search", SessionKey: fmt.Sprint("k", 9-i),
				RequestID: fmt.Sprint(id), CallID: id, ArgKeys: []string{"department"}, ArgValues: []string{v}, IngestedMs: 1}
			want[id] = v
		}
		if err := b.Add(calls, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		ID  uint64   `ch:"call_id"`
		Arg []string `ch:"arg_values"`
	}
	if err := admin.Select(ctx, &rows, "SELECT call_id, arg_values FROM spans.calls"); err != nil {
		t.Fatal(err)
	}
	got := map[uint64]string{}
	for _, r := range rows {
		if _, dup := got[r.ID]; dup || len(r.Arg) != 1 {
			t.Fatalf("call %d stored twice or with arguments %q", r.ID, r.Arg)
		}
		got[r.ID] = r.Arg[0]
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stored calls differ from those added:\n got %v\nwant %v", got, want)
	}
}
