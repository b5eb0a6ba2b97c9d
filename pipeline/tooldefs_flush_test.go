package pipeline_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/pipeline"
)

// TestToolsFlushRefusedForGoodWritesTheSightingAgain: a sighting that
// ClickHouse refuses for good (here tool_sightings is gone for a while) is
// dropped, and the next sighting of its version is written even within
// -tool-sighting-every, as a refused definition is: the dropped one was a
// return to version A, and without the next one the stored history would
// keep B in force from then on.
func TestToolsFlushRefusedForGoodWritesTheSightingAgain(t *testing.T) {
	ctx := context.Background()
	conn, _ := writerDB(t, "tools_refused")
	tl := pipeline.NewTools(pipeline.NewWriter(conn, pipeline.NewMetrics(prometheus.NewRegistry())), nil,
		pipeline.ToolsConfig{SightingEvery: time.Hour}, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	base := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	see := func(min int, hash uint64) {
		t.Helper()
		d := pipeline.ToolDef{Tenant: "acme", Server: "kb", Tool: "search_docs", Hash: hash, Definition: "{}",
			ReadOnlyHint: -1, DestructiveHint: -1, IdempotentHint: -1, OpenWorldHint: -1,
			SeenMs: base.Add(time.Duration(min) * time.Minute).UnixMilli()}
		if n := tl.Observe([]pipeline.ToolDef{d}, pipeline.ToolSourceAPI); n != 1 {
			t.Fatalf("minute %d: %d tracked", min, n)
		}
	}
	flush := func(wantErr bool) {
		t.Helper()
		if err := tl.Flush(ctx); (err != nil) != wantErr {
			t.Fatalf("flush: %v, want an error %v", err, wantErr)
		}
	}
	see(0, 0xA)
	see(10, 0xB)
	flush(false)
	if err := conn.Exec(ctx, "RENAME TABLE tool_sightings TO tool_sightings_away"); err != nil {
		t.Fatal(err)
	}
	see(20, 0xA) // back to A: a sighting alone, refused for good
	flush(true)
	if n := tl.Queued(); n != 0 {
		t.Fatalf("%d rows queued after a refusal for good", n)
	}
	if err := conn.Exec(ctx, "RENAME TABLE tool_sightings_away TO tool_sightings"); err != nil {
		t.Fatal(err)
	}
	see(30, 0xA)
	if n := tl.Queued(); n != 1 {
		t.Fatalf("the sighting of A after the refused one: %d rows queued, want 1", n)
	}
	flush(false)
	var rows []struct {
		Ms   int64  `ch:"ts_ms"`
		Hash uint64 `ch:"definition_hash"`
	}
	if err := conn.Select(ctx, &rows, "SELECT ts_ms, definition_hash FROM tool_sightings ORDER BY ts_ms"); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, r := range rows {
		got = append(got, r.Hash)
	}
	if want := []uint64{0xA, 0xB, 0xA}; !slices.Equal(got, want) {
		t.Fatalf("stored sightings %x, want %x", got, want)
	}
}
