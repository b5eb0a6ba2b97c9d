package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
)

func noEnv(string) string { return "" }

func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, noEnv, strings.NewReader(""), &out, &errOut)
	return out.String() + errOut.String(), err
}

func TestRulesCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("version: 1\nrules:\n  - id: kb.db_busy\n    server: kb\n    stage: text\n    match:\n      text: [\"DB_BUSY\"]\n    category: UNAVAILABLE\n"), 0o644)
	if out, err := runCmd(t, "rules", "check", good); err != nil || !strings.Contains(out, "ok") {
		t.Errorf("good rules: %q %v", out, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\nrules:\n  - id: x\n    match:\n      text: [\"y\"]\n    category: RATE_LIMIT\n"), 0o644)
	if _, err := runCmd(t, "rules", "check", bad); err == nil || !strings.Contains(err.Error(), "RATE_LIMIT") {
		t.Errorf("bad rules: %v, want an error naming the unknown category", err)
	}
	if _, err := runCmd(t, "rules"); err == nil {
		t.Error("rules without check FILE: want a usage error")
	}
	if _, err := runCmd(t, "nonsense"); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("unknown command: %v", err)
	}
}

func TestSampleIsDeterministicAndDecodes(t *testing.T) {
	a, err := runCmd(t, "sample", "-sessions", "20", "-end", "2026-11-29T12:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := runCmd(t, "sample", "-sessions", "20", "-end", "2026-11-29T12:00:00Z")
	if a != b || a == "" {
		t.Fatal("sample with the same flags differs")
	}
	for i, line := range strings.Split(strings.TrimSpace(a), "\n") {
		if _, _, err := pipeline.DecodeCapture([]byte(line), nil); err != nil {
			t.Fatalf("sample line %d does not decode: %v", i+1, err)
		}
	}
}

func TestMigrateAndReplay(t *testing.T) {
	srv, err := chtest.StartServer(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ch := []string{"-clickhouse-addr", srv.Addr, "-clickhouse-database", "replay_test"}
	out, err := runCmd(t, append([]string{"migrate"}, ch...)...)
	if err != nil || !strings.Contains(out, "applied 002_calls.sql") {
		t.Fatalf("first migrate: %q %v", out, err)
	}
	if out, err := runCmd(t, append([]string{"migrate"}, ch...)...); err != nil || !strings.Contains(out, "schema up to date") {
		t.Fatalf("second migrate: %q %v", out, err)
	}
	out, err = runCmd(t, append(append([]string{"replay"}, ch...), "../../e2e/testdata/calls.ndjson")...)
	if err != nil || !strings.Contains(out, "replay: 8 accepted, 1 skipped, 2 rejected") {
		t.Fatalf("replay: %q %v", out, err)
	}
	conn, err := chtest.Open(srv.Addr, "replay_test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n []struct {
		Calls uint64 `ch:"c"`
		Dead  uint64 `ch:"d"`
	}
	if err := conn.Select(context.Background(), &n, "SELECT (SELECT count() FROM calls FINAL) AS c, (SELECT count() FROM dead_letters) AS d"); err != nil {
		t.Fatal(err)
	}
	if n[0].Calls != 8 || n[0].Dead != 2 {
		t.Errorf("after replay: %d calls, %d dead letters; want 8 and 2", n[0].Calls, n[0].Dead)
	}
	// Replayed again, every call has a second row until a merge; -fold
	// merges the days the replay wrote, so that the table holds one row per
	// call without FINAL.
	out, err = runCmd(t, append(append([]string{"replay", "-fold"}, ch...), "../../e2e/testdata/calls.ndjson")...)
	if err != nil || !strings.Contains(out, "replay: 8 accepted") || !strings.Contains(out, "replay: folded partition 20") {
		t.Fatalf("replay -fold: %q %v", out, err)
	}
	var rows []struct {
		N uint64 `ch:"n"`
	}
	if err := conn.Select(context.Background(), &rows, "SELECT count() AS n FROM calls"); err != nil {
		t.Fatal(err)
	}
	if rows[0].N != 8 {
		t.Errorf("after replay -fold of calls stored before: %d rows, want 8", rows[0].N)
	}
	if _, err := runCmd(t, append(append([]string{"replay"}, ch...), "/nonexistent.ndjson")...); err == nil {
		t.Error("replay of a missing file: want an error")
	}
}

// TestRegistryExportsTheCollectorsCost: ingest's /metrics carries the
// runtime's estimate of the garbage collector's CPU, the live heap and
// the soft limit that docs/operations.md tells operators to watch, and the
// CPU the collector reports grows with the work it was given.
func TestRegistryExportsTheCollectorsCost(t *testing.T) {
	reg := newRegistry()
	value := func(name string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			m := mf.GetMetric()[0]
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
		t.Fatalf("%s not in the registry", name)
		return 0
	}
	for _, name := range []string{"go_cpu_classes_gc_total_cpu_seconds_total", "go_cpu_classes_gc_mark_assist_cpu_seconds_total",
		"go_cpu_classes_total_cpu_seconds_total", "go_gc_heap_live_bytes", "go_gc_heap_goal_bytes", "go_gc_gomemlimit_bytes",
		"go_gc_duration_seconds", "process_cpu_seconds_total"} {
		value(name)
	}
	before := value("go_cpu_classes_gc_total_cpu_seconds_total")
	keep := make([]*[64]byte, 0, 1<<16)
	for range 1 << 16 {
		keep = append(keep, new([64]byte))
	}
	for range 5 {
		runtime.GC()
	}
	runtime.KeepAlive(keep)
	if after := value("go_cpu_classes_gc_total_cpu_seconds_total"); after <= before {
		t.Fatalf("the collector's CPU did not grow over five collections: %v, then %v", before, after)
	}
}
