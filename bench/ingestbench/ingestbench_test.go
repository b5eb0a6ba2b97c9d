package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestIngestBenchRuns runs the whole benchmark on a tiny input so that the
// harness cannot rot: it builds cmd/ingest, starts a ClickHouse server, and
// every scenario checks that its table ends with each call exactly once.
// Nothing here asserts a timing.
func TestIngestBenchRuns(t *testing.T) {
	var out, log bytes.Buffer
	args := []string{"-calls", "2000", "-runs", "1", "-lines-per-request", "400", "-overload-posters", "4", "-timeout", "2m"}
	if err := run(context.Background(), args, &out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for _, s := range []string{nameJSON, nameNative, nameNativeNoView, "ingest ndjson |", "ingest ndjson+gzip |",
		"ingest otlp |", "ingest otlp+gzip |", "ingest otlp-linked |", "ingest otlp-both |", "ingest ndjson, -spool-fsync=never |", "ingest ndjson, -batch-size=10000 -inserts=1 |", "| sustained:", "| overload:"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the report has no %q row:\n%s", s, out.String())
		}
	}
}

// TestIngestBenchOnlyRunsTheSelectedScenarios checks -only and -variants,
// payload=NAME included.
func TestIngestBenchOnlyRunsTheSelectedScenarios(t *testing.T) {
	var out, log bytes.Buffer
	args := []string{"-calls", "500", "-runs", "1", "-only", "JSONEachRow,-inserts=3,-otlp-pair", "-variants", "-inserts=3;-inserts=1;payload=otlp -inserts=3;payload=otlp-both -otlp-pair-window=5s;payload=otlp-both -otlp-pair-max-bytes=64KiB"}
	if err := run(context.Background(), args, &out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for s, want := range map[string]bool{nameJSON: true, "ingest ndjson, -inserts=3 |": true, "ingest ndjson, -inserts=1 |": false,
		"ingest otlp, -inserts=3 |": true, "ingest otlp-both, -otlp-pair-window=5s |": true, "ingest otlp-both, -otlp-pair-max-bytes=64KiB |": true, "ingest ndjson |": false, nameNative + " |": false, "| sustained:": false} {
		if got := strings.Contains(out.String(), s); got != want {
			t.Errorf("row %q present: %v, want %v\n%s", s, got, want, out.String())
		}
	}
	// With 64 KiB the pairer remembers a few dozen first sides of the 500
	// calls: the others end as two rows, and the report says so. Held
	// within the window, every pair meets.
	for s, want := range map[string]bool{"ingest otlp-both, -otlp-pair-max-bytes=64KiB: calls stored as two rows": true,
		"ingest otlp-both, -otlp-pair-window=5s: calls stored as two rows": false} {
		if got := strings.Contains(out.String(), s); got != want {
			t.Errorf("%q in the report: %v, want %v\n%s", s, got, want, out.String())
		}
	}
}

// TestIngestBenchProfiles runs the in-process profile mode on a tiny input,
// on NDJSON by default and on the payload -only names, and checks that it
// writes both profiles.
func TestIngestBenchProfiles(t *testing.T) {
	for _, tc := range []struct {
		only, want string
	}{
		{"", "in-process ingest ndjson: 1000 calls"},
		{"otlp", "in-process ingest otlp: 1000 calls"},
		{"otlp-both", "in-process ingest otlp-both: 1000 calls"},
	} {
		t.Run("only="+tc.only, func(t *testing.T) {
			dir := t.TempDir()
			cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
			var out, log bytes.Buffer
			args := []string{"-calls", "1000", "-cpuprofile", cpu, "-memprofile", mem, "-only", tc.only}
			if err := run(context.Background(), args, &out, &log); err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			for _, p := range []string{cpu, mem} {
				if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
					t.Errorf("profile %s: %v", p, err)
				}
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("output %q does not contain %q", out.String(), tc.want)
			}
		})
	}
}

func TestParseVariant(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want variant
		err  bool
	}{
		{"-spool-fsync=never", variant{flags: []string{"-spool-fsync=never"}, label: "-spool-fsync=never"}, false},
		{"posters=16 -batch-size=10000 GOGC=200 bin=/tmp/x/ingest-old", variant{posters: 16, bin: "/tmp/x/ingest-old",
			flags: []string{"-batch-size=10000"}, env: []string{"GOGC=200"}, label: "posters=16 -batch-size=10000 GOGC=200 ingest-old"}, false},
		{"payload=otlp bin=/tmp/old", variant{payload: "otlp", bin: "/tmp/old", label: "old"}, false},
		{"payload=protobuf", variant{}, true},
		{"posters=0", variant{}, true},
		{"posters=many", variant{}, true},
	} {
		got, err := parseVariant(tc.in)
		if (err != nil) != tc.err || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseVariant(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}
