package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
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
	// The validated run waited for its violation rows; none would have
	// failed it. Most of its calls are marked validated.
	m := regexp.MustCompile(`ingest ndjson\+tools: \d+ call_violations rows, (\d+) calls rows with args_validated`).FindStringSubmatch(log.String())
	if m == nil {
		t.Errorf("the log names no call_violations rows and validated calls of the validated run:\n%s", log.String())
	} else if n, _ := strconv.Atoi(m[1]); n < 1000 {
		t.Errorf("%d of 2000 calls marked args_validated in the validated run; unknown tools aside, nearly all should be", n)
	}
	for _, s := range []string{nameJSON, nameNative, nameNativeNoView, "ingest ndjson |", "ingest ndjson+gzip |", "ingest ndjson+tools |",
		"ingest otlp |", "ingest otlp+gzip |", "ingest otlp+tools |", "ingest otlp-linked |", "ingest otlp-both |", "ingest ndjson, -spool-fsync=never |", "ingest ndjson, -batch-size=10000 -inserts=1 |", "| sustained:", "| sustained, every call validated (ndjson+tools):", "| overload:"} {
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

// TestIngestBenchSQLVariant: a sql= file's statements run, in order, in
// the run's database before ingest starts (a failing one stops the run,
// naming the file and the statement), and its runs are compared with the
// same scenario's without it.
func TestIngestBenchSQLVariant(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "old-view.sql")
	if err := os.WriteFile(good, []byte("-- the view of migration 010 back\nDROP TABLE calls_5m_classes_failed_mv;\nCREATE MATERIALIZED VIEW calls_5m_classes_mv TO calls_5m_classes AS\nSELECT bucket, tenant, server, tool, category, is_failure, misflagged, code, calls\nFROM (SELECT toDateTime(intDiv(toUInt32(ts), 300) * 300, 'UTC') AS bucket, tenant, server, tool, category, is_failure, misflagged, '' AS code, uniqExactState(call_id) AS calls\n  FROM calls GROUP BY bucket, tenant, server, tool, category, is_failure, misflagged)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.sql")
	if err := os.WriteFile(bad, []byte("SELECT 1;\nDROP TABLE no_such_view;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, log bytes.Buffer
	args := []string{"-calls", "300", "-runs", "1", "-only", "-inserts=3", "-variants", "-inserts=3;sql=" + good + " -inserts=3"}
	if err := run(context.Background(), args, &out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for _, want := range []string{"| ingest ndjson, sql=old-view.sql -inserts=3 |", "| ingest ndjson, -inserts=3 | ingest → ingest sql=old-view.sql |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
	args = []string{"-calls", "300", "-runs", "1", "-only", "sql=", "-variants", "sql=" + bad}
	err := run(context.Background(), args, &out, &log)
	if err == nil || !strings.Contains(err.Error(), "bad.sql, statement 2") {
		t.Errorf("a failing statement: got error %v, want one naming bad.sql, statement 2", err)
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
		// The in-process ingest validates as cmd/ingest does: the run
		// waits for the violation rows and fails without them.
		{"ndjson+tools", "in-process ingest ndjson+tools: 1000 calls"},
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
		{"-spool-fsync=never", variant{flags: []string{"-spool-fsync=never"}, label: "-spool-fsync=never", same: "-spool-fsync=never"}, false},
		{"posters=16 -batch-size=10000 GOGC=200 bin=/tmp/x/ingest-old", variant{posters: 16, bin: "/tmp/x/ingest-old",
			flags: []string{"-batch-size=10000"}, env: []string{"GOGC=200"}, label: "posters=16 -batch-size=10000 GOGC=200 ingest-old",
			same: "posters=16 -batch-size=10000 GOGC=200"}, false},
		{"payload=otlp bin=/tmp/old", variant{payload: "otlp", bin: "/tmp/old", label: "old"}, false},
		{"payload=otlp sql=/tmp/x/old-view.sql -inserts=1", variant{payload: "otlp", sql: "/tmp/x/old-view.sql", flags: []string{"-inserts=1"},
			label: "sql=old-view.sql -inserts=1", same: "-inserts=1"}, false},
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

// TestWritePairs: runs of one scenario with different builds (ingest
// binaries, sql= files) are compared run by run against the scenario's
// first build, the server's CPU where both runs measured it; a scenario
// with one build, and a run without its pair, add nothing.
func TestWritePairs(t *testing.T) {
	res := func(group, bin string, run int, cpuMs, elapsedMs int64) result {
		return result{scenario: group + ", " + bin, group: group, bin: bin, run: run, calls: 1000,
			ingestCPU: time.Duration(cpuMs) * time.Millisecond, elapsed: time.Duration(elapsedMs) * time.Millisecond,
			serverCPU: time.Duration(cpuMs/2) * time.Millisecond}
	}
	r := &report{cfg: &config{runs: 3}, runs: []result{
		res("ingest otlp", "ingest-old", 1, 20, 100), res("ingest otlp", "ingest-new", 1, 18, 80),
		res("ingest ndjson", "ingest", 1, 10, 100),
		res("ingest otlp", "ingest-old", 2, 20, 100), res("ingest otlp", "ingest-new", 2, 22, 125),
		res("ingest otlp", "ingest-old", 3, 20, 100), res("ingest otlp", "ingest-new", 3, 19, 100),
		res("ingest otlp", "ingest-other", 3, 30, 200), // no pair in runs 1 and 2
		res("ingest ndjson", "ingest sql=old.sql", 1, 12, 100),
	}}
	r.runs[len(r.runs)-1].serverCPU = 0 // not measured: a dash
	var out bytes.Buffer
	r.writePairs(&out)
	for _, want := range []string{
		"| ingest otlp | ingest-old → ingest-new | 0.900 1.100 0.950 | 0.950 | 0.900 1.100 0.900 | 0.900 | 1.250 0.800 1.000 | 1.000 |",
		"| ingest otlp | ingest-old → ingest-other | 1.500 | 1.500 | 1.500 | 1.500 | 0.500 | 0.500 |",
		"| ingest ndjson | ingest → ingest sql=old.sql | 1.200 | 1.200 | – | – | 1.000 | 1.000 |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no row %q in\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "| ingest ndjson | ingest → ingest |") {
		t.Errorf("a build was compared with itself:\n%s", out.String())
	}
	var none bytes.Buffer
	(&report{cfg: &config{runs: 1}, runs: []result{res("ingest ndjson", "ingest", 1, 10, 100)}}).writePairs(&none)
	if none.Len() != 0 {
		t.Errorf("nothing to compare, wrote %q", none.String())
	}
}
