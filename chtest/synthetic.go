package chtest

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

//go:embed synthetic/calls.sql
var syntheticCallsSQL string

//go:embed synthetic/replays.sql
var syntheticReplaysSQL string

//go:embed synthetic/definitions.sql
var syntheticDefinitionsSQL string

//go:embed synthetic/sightings.sql
var syntheticSightingsSQL string

//go:embed synthetic/violations.sql
var syntheticViolationsSQL string

// BenchCalls returns the number of synthetic calls a scale benchmark
// generates: MCPLENS_BENCH_CALLS, else def.
func BenchCalls(tb testing.TB, def int64) int64 {
	return benchSetting(tb, "MCPLENS_BENCH_CALLS", def, 1, math.MaxInt64)
}

// BenchFailedPercent returns the percentage of failed calls a scale
// benchmark generates: MCPLENS_BENCH_FAILED_PCT, else def; 1 to 15.
func BenchFailedPercent(tb testing.TB, def int) int {
	return int(benchSetting(tb, "MCPLENS_BENCH_FAILED_PCT", int64(def), 1, MaxFailedPercent))
}

// BenchToolNames returns the number of tool names a scale benchmark's
// calls use: MCPLENS_BENCH_TOOL_NAMES, else DefaultToolNames; 1 to
// MaxToolNames (see Synthetic).
func BenchToolNames(tb testing.TB) int {
	return int(benchSetting(tb, "MCPLENS_BENCH_TOOL_NAMES", DefaultToolNames, 1, MaxToolNames))
}

// BenchDataName names a scale benchmark's data in its sub-benchmarks: the
// number of calls, and the number of tool names when it is not the
// default ("1000000", "1000000x1820names").
func BenchDataName(calls int64, toolNames int) string {
	name := strconv.FormatInt(calls, 10)
	if toolNames != DefaultToolNames && toolNames != 0 {
		name += "x" + strconv.Itoa(toolNames) + "names"
	}
	return name
}

// benchSetting reads the whole number in the environment variable name,
// def when it is unset; a value outside [lo, hi] fails the benchmark.
func benchSetting(tb testing.TB, name string, def, lo, hi int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		want := fmt.Sprintf("from %d to %d", lo, hi)
		if hi == math.MaxInt64 {
			want = fmt.Sprintf("of at least %d", lo)
		}
		tb.Fatalf("%s=%q: want a whole number %s", name, v, want)
	}
	return n
}

// MaxFailedPercent is the failed share of Synthetic's full mix of calls.
const MaxFailedPercent = 15

// The synthetic fleet's calls name MaxToolNames (tenant, server, tool)
// triples: 140 (tenant, server) pairs with 13 tools each. By default the
// tools share DefaultToolNames names, tool0 to tool12, each on every
// server; with MaxToolNames names every triple has its own, a fleet of
// many small tools (about 33 calls an hour each at 10M calls a week).
const (
	DefaultToolNames = 13
	MaxToolNames     = 1820
)

// SyntheticData says what Synthetic generates.
type SyntheticData struct {
	Calls     int64         // calls generated (before the re-ingested 1 %)
	FailedPct int           // percent of them failed, 1 to MaxFailedPercent
	ToolNames int           // names the tools share, 1 to MaxToolNames; 0 means DefaultToolNames
	End       time.Time     // the calls end here,
	Span      time.Duration // spread evenly over this span before End
}

// Synthetic fills e's calls table with d.Calls synthetic calls spread over
// d.Span and ending at d.End, generated inside the engine
// (synthetic/calls.sql: sessions of 25 calls 4 s apart, 20 tenants, 7
// servers, 13 tools in each (tenant, server) under d.ToolNames names, about
// d.FailedPct % of them failed; the failures left out of the full mix are
// OK calls instead; 0.2 % more called a tool name the server does not have,
// UNKNOWN_TOOL); then ingests 1 % of them again, half of that reclassified
// (synthetic/replays.sql), so that queries pay for counting a re-ingested
// call once; then captures a definition of every tool, half of them without
// hints, and a second version of a quarter of them from half-way through
// the span (synthetic/definitions.sql), sighted once an hour as ingest's
// default writes them (synthetic/sightings.sql); then validates every
// stored call row of a tool the server has against its version
// (synthetic/violations.sql: the refused calls and 2 % of the others break
// the schema); then waits, at most 5 minutes, until the engine runs no
// merge in the database, so that the merges of millions of fresh rows do
// not slow the first queries timed. The scale benchmarks of queries/ and
// dashboards/ share it.
func Synthetic(ctx context.Context, e *Engine, d SyntheticData) error {
	n, failedPct, end, span := d.Calls, d.FailedPct, d.End, d.Span
	if failedPct < 1 || failedPct > MaxFailedPercent {
		return fmt.Errorf("%s: %d %% of calls failed: want 1 to %d", e.Name, failedPct, MaxFailedPercent)
	}
	names := d.ToolNames
	if names == 0 {
		names = DefaultToolNames
	}
	if names < 1 || names > MaxToolNames {
		return fmt.Errorf("%s: %d tool names: want 1 to %d", e.Name, names, MaxToolNames)
	}
	err := e.DB.Exec(ctx, syntheticCallsSQL,
		clickhouse.Named("n", n), clickhouse.Named("sessions", (n+24)/25),
		clickhouse.Named("kept_failures_pct", failedPct*100/MaxFailedPercent), clickhouse.Named("tool_names", names),
		clickhouse.Named("end_ms", end.UnixMilli()), clickhouse.Named("span_ms", span.Milliseconds()))
	if err != nil {
		return fmt.Errorf("%s: generate %d calls: %w", e.Name, n, err)
	}
	if err := e.DB.Exec(ctx, syntheticReplaysSQL); err != nil {
		return fmt.Errorf("%s: replay 1 %% of %d calls: %w", e.Name, n, err)
	}
	for _, q := range []struct{ what, sql string }{
		{"tool definitions", syntheticDefinitionsSQL},
		{"tool sightings", syntheticSightingsSQL},
		{"schema violations", syntheticViolationsSQL},
	} {
		if err := e.DB.Exec(ctx, q.sql, clickhouse.Named("start_ms", end.Add(-span).UnixMilli()),
			clickhouse.Named("span_ms", span.Milliseconds())); err != nil {
			return fmt.Errorf("%s: %s: %w", e.Name, q.what, err)
		}
	}
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		var rows []struct {
			N uint64 `ch:"n"`
		}
		if err := e.DB.Select(ctx, &rows, "SELECT count() AS n FROM system.merges WHERE database = currentDatabase()"); err != nil {
			return fmt.Errorf("%s: merges: %w", e.Name, err)
		}
		if len(rows) == 1 && rows[0].N == 0 {
			return nil
		}
	}
	return nil
}
