package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
)

func TestRetentionCommand(t *testing.T) {
	srv, err := chtest.StartServer(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ch := []string{"-clickhouse-addr", srv.Addr, "-clickhouse-database", "retention_test"}
	if out, err := runCmd(t, append([]string{"retention"}, ch...)...); err == nil || !strings.Contains(err.Error(), "ingest migrate") {
		t.Fatalf("retention before migrate: %q %v; want an error that names ingest migrate", out, err)
	}
	if out, err := runCmd(t, append([]string{"migrate"}, ch...)...); err != nil {
		t.Fatalf("migrate: %q %v", out, err)
	}
	conn, err := chtest.Open(srv.Addr, "retention_test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	now := time.Now().UTC()
	var calls []pipeline.Call
	for i, age := range []time.Duration{50 * 24 * time.Hour, 2 * time.Hour} {
		ts := now.Add(-age).Truncate(time.Second)
		calls = append(calls, pipeline.Call{Time: ts, TimeMs: ts.UnixMilli(), Tenant: "acme", Server: "kb", Tool: "t",
			SessionKey: "s", RequestID: fmt.Sprint(i), CallID: uint64(i + 1), ArgKeys: []string{}, ArgValues: []string{}, IngestedMs: 1})
	}
	if err := pipeline.NewWriter(conn, pipeline.NewMetrics(prometheus.NewRegistry())).WriteCalls(context.Background(), calls); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(t, append(append([]string{"retention"}, ch...), "-retention", "720h")...)
	old := now.Add(-50 * 24 * time.Hour).Format("20060102")
	if err != nil || !strings.Contains(out, "calls: dropped partition "+old) || strings.Contains(out, "calls_5m") {
		t.Fatalf("retention: %q %v; want partition %s of calls dropped and the rollup kept (400 days)", out, err, old)
	}
	if out, err := runCmd(t, append(append([]string{"retention"}, ch...), "-retention", "720h")...); err != nil || !strings.Contains(out, "retention up to date (partitions mode)") {
		t.Fatalf("second retention: %q %v", out, err)
	}
	var n []struct {
		N uint64 `ch:"n"`
	}
	if err := conn.Select(context.Background(), &n, "SELECT count() AS n FROM calls FINAL"); err != nil || n[0].N != 1 {
		t.Fatalf("calls left: %v %v; want 1", n, err)
	}
}

func TestServeRefusesUnsafeSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-listen", "0.0.0.0:0"}, "-insecure-open"},
		{[]string{"-listen", "127.0.0.1:0", "-grpc-listen", ":4317"}, "-grpc-listen :4317 is not a loopback address"},
		{[]string{"-spool-fsync", "sometimes"}, "want always, interval or never"},
		{[]string{"-spool-dir", ""}, "-spool-dir is empty"},
		{[]string{"-spool-max-bytes", "1000"}, "at least twice -max-decompressed-bytes"},
		{[]string{"-retention", "36h"}, "whole days"},
		{[]string{"-retention", "720h", "-rollup-retention", "168h"}, "shorter than -retention"},
		{[]string{"-tokens-file", "/nonexistent/tokens.yaml"}, "no such file"},
		// Refused before ClickHouse is reached (nothing listens on port 1).
		{[]string{"-pprof-listen", ":6060", "-clickhouse-addr", "127.0.0.1:1"}, "-pprof-listen :6060 is not a loopback address"},
	} {
		out, err := runCmd(t, append([]string{"serve", "-spool-dir", t.TempDir()}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %v: %v (%q), want an error containing %q", tc.args, err, out, tc.want)
		}
	}
}

func TestHeapLimit(t *testing.T) {
	for _, tc := range []struct {
		flag, env string
		queue     int
		pair      int64
		want      int64
		set       bool
		err       bool
	}{
		{"", "", 300000, 16 << 20, 272 << 20, true, false},
		{"", "", 5000, 16 << 20, 272 << 20, true, false},
		{"", "", 300000, 64 << 20, 320 << 20, true, false},
		{"", "", 600000, 16 << 20, 528 << 20, true, false},
		{"", "1GiB", 100000, 16 << 20, 0, false, false}, // GOMEMLIMIT stays in charge
		{"512MiB", "1GiB", 100000, 16 << 20, 512 << 20, true, false},
		{"1GiB", "", 100000, 16 << 20, 1 << 30, true, false},
		{"300000000", "", 100000, 16 << 20, 300000000, true, false},
		{"64KiB", "", 100000, 16 << 20, 64 << 10, true, false},
		{"off", "", 100000, 16 << 20, math.MaxInt64, true, false},
		{"lots", "", 100000, 16 << 20, 0, false, true},
		{"-5MiB", "", 100000, 16 << 20, 0, false, true},
		{"9999999TiB", "", 100000, 16 << 20, 0, false, true},
	} {
		o := &opsConfig{memoryLimit: tc.flag}
		got, set, err := o.heapLimit(func(k string) string {
			if k == "GOMEMLIMIT" {
				return tc.env
			}
			return ""
		}, tc.queue, tc.pair)
		if (err != nil) != tc.err || got != tc.want || set != tc.set {
			t.Errorf("-memory-limit %q, GOMEMLIMIT %q: %d, %v, %v; want %d, %v, error %v", tc.flag, tc.env, got, set, err, tc.want, tc.set, tc.err)
		}
	}
}
