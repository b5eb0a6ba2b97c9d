package queries_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/queries"
)

// BenchmarkScale measures every endpoint's query on synthetic calls spread
// over 7 days (MCPLENS_BENCH_CALLS, default 1,000,000;
// MCPLENS_BENCH_FAILED_PCT of them failed, default 15;
// MCPLENS_BENCH_TOOL_NAMES tool names, default 13, 1,820 for a fleet of many
// small tools), for the 24 hours to midnight, the 24 hours to noon (two
// daily partitions, as "the last 24 hours" mostly reads) and 7 days, on
// every engine, on the data chtest.Synthetic generates inside each engine
// (1 % of it ingested again, half of that reclassified, so that every query
// pays for counting a re-ingested call once), then the endpoints that read
// the folds again ("-folded") once the complete hours are folded. See
// BENCHMARKS.md for the method and numbers.
func BenchmarkScale(b *testing.B) {
	n := chtest.BenchCalls(b, 1_000_000)
	failed := chtest.BenchFailedPercent(b, chtest.MaxFailedPercent)
	names := chtest.BenchToolNames(b)
	end := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	span := 7 * 24 * time.Hour
	ctx := context.Background()
	windows := []struct {
		name string
		f    queries.Filter
	}{
		{"24h", queries.Filter{From: end.Add(-24 * time.Hour), To: end}},
		// The last 24 hours as a user asks at noon: two daily partitions.
		{"24h-noon", queries.Filter{From: end.Add(-36 * time.Hour), To: end.Add(-12 * time.Hour)}},
		{"7d", queries.Filter{From: end.Add(-span), To: end}},
	}
	endpoints := []struct {
		name string
		run  func(queries.DB, queries.Filter) error
	}{
		{"failure-rates", func(db queries.DB, f queries.Filter) error {
			_, err := queries.FailureRatesFrom(ctx, db, f, 0, false)
			return err
		}},
		{"failure-rates-rollup", func(db queries.DB, f queries.Filter) error {
			_, err := queries.FailureRatesFrom(ctx, db, f, time.Hour, true)
			return err
		}},
		{"retry-outcomes", func(db queries.DB, f queries.Filter) error {
			_, err := queries.RetryOutcomes(ctx, db, f, time.Minute)
			return err
		}},
		{"retry-outcomes-by-client", func(db queries.DB, f queries.Filter) error {
			f.ByClient = true
			_, err := queries.RetryOutcomes(ctx, db, f, time.Minute)
			return err
		}},
		{"recalls", func(db queries.DB, f queries.Filter) error {
			_, err := queries.Recalls(ctx, db, f, time.Minute)
			return err
		}},
		{"recalls-by-client", func(db queries.DB, f queries.Filter) error {
			f.ByClient = true
			_, err := queries.Recalls(ctx, db, f, time.Minute)
			return err
		}},
		{"retry-loops", func(db queries.DB, f queries.Filter) error {
			_, err := queries.RetryLoops(ctx, db, f, time.Minute, queries.RetryLoopsOptions{MinAttempts: 5, Limit: 50})
			return err
		}},
		{"misclassifications", func(db queries.DB, f queries.Filter) error {
			_, err := queries.Misclassifications(ctx, db, f, time.Minute, 5)
			return err
		}},
		{"empty-results", func(db queries.DB, f queries.Filter) error {
			_, err := queries.EmptyResults(ctx, db, f, queries.EmptyResultsOptions{MinCalls: 1, Limit: 100})
			return err
		}},
		{"invalid-argument-spikes", func(db queries.DB, f queries.Filter) error {
			// Thresholds so low that every bucket is a spike: the endpoint's
			// second query (the top arguments of each spike) runs too.
			_, err := queries.InvalidArgumentSpikes(ctx, db, f, queries.SpikeOptions{Ratio: 0.5, MinShare: 0.01})
			return err
		}},
		{"invalid-argument-spikes-default", func(db queries.DB, f queries.Filter) error {
			// The default thresholds: the synthetic fleet's even 3 % share
			// passes no floor, so no baseline is read, as in a healthy fleet.
			_, err := queries.InvalidArgumentSpikes(ctx, db, f, queries.SpikeOptions{})
			return err
		}},
		{"overview", func(db queries.DB, f queries.Filter) error {
			_, _, err := queries.Overview(ctx, db, f, 10)
			return err
		}},
		{"tools", func(db queries.DB, f queries.Filter) error {
			_, err := queries.ToolVersions(ctx, db, f)
			return err
		}},
		{"schema-violations", func(db queries.DB, f queries.Filter) error {
			_, err := queries.SchemaViolations(ctx, db, f, queries.SchemaViolationOptions{})
			return err
		}},
		{"unknown-tools", func(db queries.DB, f queries.Filter) error {
			_, err := queries.UnknownTools(ctx, db, f, queries.UnknownToolOptions{})
			return err
		}},
		// GET /api/v1/calls' first page (50 calls) with no condition, with
		// a condition that about 3 % of the calls meet, one that a ninth
		// of INVALID_ARGUMENT's meet (a rare class's argument value), and
		// every condition but the range met by every call (the set of the
		// matching statement as large as the range).
		{"calls", func(db queries.DB, f queries.Filter) error {
			_, err := queries.CallList(ctx, db, f, queries.CallsOptions{Limit: 50})
			return err
		}},
		{"calls-failed", func(db queries.DB, f queries.Filter) error {
			failed := true
			_, err := queries.CallList(ctx, db, f, queries.CallsOptions{Failed: &failed, Limit: 50})
			return err
		}},
		{"calls-invalid-argument-d1", func(db queries.DB, f queries.Filter) error {
			d1 := "d1"
			_, err := queries.CallList(ctx, db, f, queries.CallsOptions{Category: "INVALID_ARGUMENT", ArgKey: "department", ArgValue: &d1, Limit: 50})
			return err
		}},
		{"calls-department", func(db queries.DB, f queries.Filter) error {
			_, err := queries.CallList(ctx, db, f, queries.CallsOptions{ArgKey: "department", Limit: 50})
			return err
		}},
		// The form a page switches to once a candidate's latest ingest
		// fails its conditions (a replayed range), alone: its lookup of the
		// copied calls' latest ingests reads the folds once there are.
		{"calls-latest-only-failed", func(db queries.DB, f queries.Filter) error {
			failed := true
			_, err := queries.CallListLatestOnly(ctx, db, f, queries.CallsOptions{Failed: &failed, Limit: 50})
			return err
		}},
	}
	for _, e := range chtest.Engines(b) {
		start := time.Now()
		err := chtest.Synthetic(ctx, e, chtest.SyntheticData{Calls: n, FailedPct: failed, ToolNames: names, End: end, Span: span})
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: generated %d calls, %d %% failed, %d tool names, in %s (background merges included)",
			e.Name, n, failed, names, time.Since(start).Round(time.Millisecond))
		run := func(suffix string, only func(name string) bool) {
			for _, w := range windows {
				for _, ep := range endpoints {
					if !only(ep.name) {
						continue
					}
					b.Run(strings.SplitN(e.Name, "-", 2)[0]+"/"+chtest.BenchDataName(n, names)+"/"+w.name+"/"+ep.name+suffix, func(b *testing.B) {
						for b.Loop() {
							if err := ep.run(e.DB, w.f); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
			}
		}
		run("", func(string) bool { return true })
		// The endpoints that read the folds (the spikes' baseline and range,
		// schema violations' counts, the others' copied call ids, the chain
		// endpoints' chains and failures), again once the retention job has
		// folded the complete hours (compact.RollupHours) and their chains
		// (compact.RollupChains), as it has within the hour in production.
		start = time.Now()
		res, err := compact.RollupHours(ctx, e.DB, time.Now(), time.Since(end)+30*24*time.Hour, 0)
		if err != nil {
			b.Fatal(err)
		}
		chains, err := compact.RollupChains(ctx, e.DB, time.Now(), time.Since(end)+30*24*time.Hour, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: folded %d hours and their chains in %s (chains %s)", e.Name, len(res.Folded), time.Since(start).Round(time.Millisecond), chains.Took.Round(time.Millisecond))
		run("-folded", func(name string) bool {
			switch name {
			case "overview", "failure-rates", "empty-results", "misclassifications", "schema-violations", "calls-latest-only-failed",
				"retry-outcomes", "retry-outcomes-by-client", "recalls", "recalls-by-client", "retry-loops":
				return true
			}
			return strings.HasPrefix(name, "invalid-argument-spikes")
		})
	}
}

// TestSyntheticFailedShare checks the scale data's failed share, which
// decides how many (session, tool) groups the chain queries collect: about
// the percentage asked for, and every row's failure flag, error flag and
// category telling the same story, re-ingested copies included; and its
// UNKNOWN_TOOL calls: about 0.2 %, unvalidated, named as calls.sql says.
func TestSyntheticFailedShare(t *testing.T) {
	end := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for _, pct := range []int{chtest.MaxFailedPercent, 3} {
		t.Run(strconv.Itoa(pct)+"pct", func(t *testing.T) {
			for _, e := range chtest.Engines(t) {
				t.Run(e.Name, func(t *testing.T) {
					ctx := context.Background()
					if err := chtest.Synthetic(ctx, e, chtest.SyntheticData{Calls: 20_000, FailedPct: pct, End: end, Span: 24 * time.Hour}); err != nil {
						t.Fatal(err)
					}
					var rows []struct {
						Originals    uint64 `ch:"originals"`
						Failed       uint64 `ch:"failed"`
						Inconsistent uint64 `ch:"inconsistent"`
						Unknown      uint64 `ch:"unknown"`
						Names        uint64 `ch:"names"`
						Clients      uint64 `ch:"clients"`
						Mixed        uint64 `ch:"mixed"`
					}
					err := e.DB.Select(ctx, &rows, `SELECT
  countIf(ingested_ms = 1) AS originals,
  countIf(ingested_ms = 1 AND is_failure = 1) AS failed,
  countIf(is_failure != toUInt8(CAST(category AS String) NOT IN ('OK', 'EMPTY_RESULT'))
    OR ingested_ms = 1 AND is_error != toInt8(is_failure)
    OR ingested_ms = 1 AND (category = 'UNKNOWN_TOOL') = args_validated) AS inconsistent,
  countIf(ingested_ms = 1 AND category = 'UNKNOWN_TOOL') AS unknown,
  uniqExactIf(tool, category = 'UNKNOWN_TOOL' AND tool NOT LIKE 'tool%s' AND tool NOT LIKE 'mcp\_\_srv%'
    AND tool NOT LIKE 'get\_tool%' AND tool != 'summon_dragon') AS names,
  uniqExact(client) AS clients,
  (SELECT count() FROM (SELECT session_key FROM calls GROUP BY session_key HAVING uniqExact(client) > 1)) AS mixed
FROM calls`)
					if err != nil {
						t.Fatal(err)
					}
					r := rows[0]
					if r.Originals != 20_000 {
						t.Fatalf("%d calls generated, want 20000", r.Originals)
					}
					if got := float64(r.Failed) / float64(r.Originals) * 100; got < float64(pct)-1 || got > float64(pct)+1 {
						t.Errorf("%.2f %% of the calls failed, want %d %% ± 1", got, pct)
					}
					if r.Clients != 5 || r.Mixed != 0 {
						t.Errorf("%d clients, %d sessions with more than one; want five, one a session", r.Clients, r.Mixed)
					}
					if r.Inconsistent != 0 {
						t.Errorf("%d rows whose is_failure, is_error, category and args_validated disagree", r.Inconsistent)
					}
					// 0.2 % asked for a name the server does not have, in
					// the four shapes of synthetic/calls.sql.
					if got := float64(r.Unknown) / float64(r.Originals) * 100; got < 0.1 || got > 0.3 || r.Names != 0 {
						t.Errorf("%.2f %% of the calls UNKNOWN_TOOL, %d of their names of no known shape; want 0.2 %% ± 0.1", got, r.Names)
					}
				})
			}
		})
	}
	if err := chtest.Synthetic(context.Background(), chtest.Engines(t)[0], chtest.SyntheticData{Calls: 10, End: end, Span: time.Hour}); err == nil {
		t.Error("0 % failed accepted")
	}
}

// TestSyntheticToolData checks the scale data's definitions, sightings and
// schema violations, which the tools, schema-violations and
// misclassifications endpoints read: two versions for a quarter of the
// tools, every call validated once, and each violation counted as the calls
// that break it.
func TestSyntheticToolData(t *testing.T) {
	end := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	span := 24 * time.Hour
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			ctx := context.Background()
			if err := chtest.Synthetic(ctx, e, chtest.SyntheticData{Calls: 20_000, FailedPct: chtest.MaxFailedPercent, End: end, Span: span}); err != nil {
				t.Fatal(err)
			}
			var want []struct {
				Tools    uint64 `ch:"tools"`
				Changed  uint64 `ch:"changed"`
				Calls    uint64 `ch:"calls"`
				Refused  uint64 `ch:"refused"`
				Accepted uint64 `ch:"accepted"`
			}
			err := e.DB.Select(ctx, &want, `SELECT
  uniqExact(tenant, server, tool) AS tools,
  uniqExactIf((tenant, server, tool), cityHash64(toString(server), toString(tool)) % 4 = 0) AS changed,
  uniqExact(call_id) AS calls,
  uniqExactIf(call_id, rpc_code = -32602) AS refused,
  uniqExactIf(call_id, rpc_code != -32602 AND intDiv(call_id, 7) % 100 < 2) AS accepted
FROM calls
WHERE args_validated = 1`)
			if err != nil {
				t.Fatal(err)
			}
			w := want[0]
			if w.Changed == 0 || w.Refused == 0 || w.Accepted == 0 {
				t.Fatalf("the data has no changed tool, refused call or accepted violation: %+v", w)
			}
			f := queries.Filter{From: end.Add(-span), To: end}
			versions, err := queries.ToolVersions(ctx, e.DB, f)
			if err != nil {
				t.Fatal(err)
			}
			second := 0
			for _, v := range versions {
				if v.Version == 2 {
					second++
					if v.FirstSeen != end.Add(-span/2) || !v.Current || v.Description != "second version" {
						t.Errorf("second version %+v: want first seen half-way through, current, described", v)
					}
				}
			}
			if uint64(len(versions)) != w.Tools+w.Changed || uint64(second) != w.Changed {
				t.Errorf("%d versions, %d of them second ones; want %d and %d", len(versions), second, w.Tools+w.Changed, w.Changed)
			}
			rows, err := queries.SchemaViolations(ctx, e.DB, f, queries.SchemaViolationOptions{Limit: 10000})
			if err != nil {
				t.Fatal(err)
			}
			by := map[string]uint64{}
			validated := map[string]uint64{} // per tool, repeated on each of its rows
			for _, r := range rows {
				by[r.Path+"/"+r.Reason] += r.Calls
				validated[r.Tool] = r.ValidatedCalls
				if r.Path == "limit" && r.InvalidArgumentCalls+r.AcceptedCalls != r.Calls {
					t.Errorf("%+v: a refused call is neither INVALID_ARGUMENT nor accepted", r)
				}
			}
			if by["limit/out_of_range"] != w.Refused || by["department/not_in_enum"] != w.Accepted || by["amount_due/missing_required"] == 0 {
				t.Errorf("violations %v; want limit/out_of_range %d, department/not_in_enum %d, some amount_due/missing_required",
					by, w.Refused, w.Accepted)
			}
			var sum uint64
			for _, n := range validated {
				sum += n
			}
			if sum != w.Calls { // every tool has a refused call in 20,000
				t.Errorf("%d validated calls over %d tools, want every call: %d", sum, len(validated), w.Calls)
			}
		})
	}
}

// TestSyntheticToolNames checks the scale data's tool names: the fleet's
// 1,820 (tenant, server, tool) triples share as many names as asked for,
// tool0 to tool<n-1> (by default the 13 names of every server); with one
// name per triple every name lives on one (tenant, server); and a number
// out of range is refused.
func TestSyntheticToolNames(t *testing.T) {
	end := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for _, names := range []int{0, 100, chtest.MaxToolNames} {
		t.Run(strconv.Itoa(names), func(t *testing.T) {
			want := names
			if want == 0 {
				want = chtest.DefaultToolNames
			}
			for _, e := range chtest.Engines(t) {
				t.Run(e.Name, func(t *testing.T) {
					ctx := context.Background()
					d := chtest.SyntheticData{Calls: 20_000, FailedPct: 3, ToolNames: names, End: end, Span: 24 * time.Hour}
					if err := chtest.Synthetic(ctx, e, d); err != nil {
						t.Fatal(err)
					}
					var rows []struct {
						Names   uint64 `ch:"names"`
						Triples uint64 `ch:"triples"`
						Spread  uint64 `ch:"spread"` // (tenant, server) pairs of the most widespread name
						Last    string `ch:"last"`
					}
					err := e.DB.Select(ctx, &rows, `SELECT
  uniqExact(tool) AS names,
  sum(pairs) AS triples,
  max(pairs) AS spread,
  concat('tool', toString(max(toUInt32(substring(tool, 5))))) AS last
FROM (
  SELECT CAST(tool AS String) AS tool, uniqExact(tenant, server) AS pairs
  FROM calls
  WHERE args_validated = 1
  GROUP BY tool
)`)
					if err != nil {
						t.Fatal(err)
					}
					r := rows[0]
					if r.Names != uint64(want) || r.Triples != chtest.MaxToolNames || r.Last != "tool"+strconv.Itoa(want-1) {
						t.Errorf("%d names up to %s over %d triples, want %d names up to tool%d over %d",
							r.Names, r.Last, r.Triples, want, want-1, chtest.MaxToolNames)
					}
					if wantSpread := uint64(140 * 13 / want); want <= 140 && r.Spread < wantSpread || want == chtest.MaxToolNames && r.Spread != 1 {
						t.Errorf("the most widespread name is on %d (tenant, server) pairs", r.Spread)
					}
				})
			}
		})
	}
	d := chtest.SyntheticData{Calls: 10, FailedPct: 3, ToolNames: chtest.MaxToolNames + 1, End: end, Span: time.Hour}
	if err := chtest.Synthetic(context.Background(), chtest.Engines(t)[0], d); err == nil {
		t.Errorf("%d tool names accepted", d.ToolNames)
	}
}
