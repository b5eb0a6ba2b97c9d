package queries_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/queries"
)

func failureFixture() []call {
	return []call{
		// search_docs: 5 calls, 2 rate limited (one JSON-RPC coded), 1 invalid argument, 1 empty result.
		{at: 0, session: "s1", tool: "search_docs", req: "1", category: classify.RateLimited},
		{at: 2 * time.Second, session: "s1", tool: "search_docs", req: "2", category: classify.RateLimited, code: -32000},
		{at: 5 * time.Second, session: "s1", tool: "search_docs", req: "3"},
		{at: 10 * time.Minute, session: "s2", tool: "search_docs", req: "1", category: classify.InvalidArgument, code: -32602},
		{at: 70 * time.Minute, session: "s2", tool: "search_docs", req: "2", category: classify.EmptyResult},
		// get_doc: 2 calls, 1 not found.
		{at: 3 * time.Minute, session: "s1", tool: "get_doc", req: "4", category: classify.NotFound},
		{at: 4 * time.Minute, session: "s1", tool: "get_doc", req: "5"},
		// another tenant and a call outside the range: filtered out.
		{at: time.Minute, tenant: "globex", session: "g1", tool: "search_docs", req: "1", category: classify.Internal, code: -32603},
		{at: 3 * time.Hour, session: "s3", tool: "search_docs", req: "1", category: classify.Internal},
	}
}

func TestFailureRates(t *testing.T) {
	ctx := context.Background()
	f := queries.Filter{From: t0, To: t0.Add(2 * time.Hour), Tenant: "acme"}
	want := []queries.FailureRate{
		{Time: t0, Tool: "get_doc", Category: "NOT_FOUND", Code: 0, Calls: 2, Failures: 1, Rate: 0.5},
		{Time: t0, Tool: "search_docs", Category: "INVALID_ARGUMENT", Code: -32602, Calls: 5, Failures: 1, Rate: 0.2},
		{Time: t0, Tool: "search_docs", Category: "RATE_LIMITED", Code: -32000, Calls: 5, Failures: 1, Rate: 0.2},
		{Time: t0, Tool: "search_docs", Category: "RATE_LIMITED", Code: 0, Calls: 5, Failures: 1, Rate: 0.2},
	}
	wantHourly := []queries.FailureRate{
		{Time: t0, Tool: "get_doc", Category: "NOT_FOUND", Code: 0, Calls: 2, Failures: 1, Rate: 0.5},
		{Time: t0, Tool: "search_docs", Category: "INVALID_ARGUMENT", Code: -32602, Calls: 4, Failures: 1, Rate: 0.25},
		{Time: t0, Tool: "search_docs", Category: "RATE_LIMITED", Code: -32000, Calls: 4, Failures: 1, Rate: 0.25},
		{Time: t0, Tool: "search_docs", Category: "RATE_LIMITED", Code: 0, Calls: 4, Failures: 1, Rate: 0.25},
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, rows(failureFixture()...))
			got, err := queries.FailureRates(ctx, e.DB, f, 0)
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, got, want)
			got, err = queries.FailureRates(ctx, e.DB, f, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, got, wantHourly) // the second hour has only an empty result: no failure rows
			gf := f
			gf.Tenant, gf.Tool = "globex", "search_docs"
			got, err = queries.FailureRates(ctx, e.DB, gf, 0)
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, got, []queries.FailureRate{{Time: t0, Tool: "search_docs", Category: "INTERNAL", Code: -32603, Calls: 1, Failures: 1, Rate: 1}})
		})
	}
}

// TestReingestCountsOnce pins the idempotency guarantee: the same calls
// ingested twice (same tenant, server, session, request id and time) count
// once, before and after ClickHouse merges the parts.
func TestReingestCountsOnce(t *testing.T) {
	ctx := context.Background()
	f := queries.Filter{From: t0, To: t0.Add(2 * time.Hour), Tenant: "acme"}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			fx := rows(failureFixture()...)
			e.Insert(t, fx)
			once, err := queries.FailureRates(ctx, e.DB, f, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := range fx {
				fx[i].IngestedMs = 2 // a later replay of the same calls
			}
			e.Insert(t, fx)
			twice, err := queries.FailureRates(ctx, e.DB, f, 0)
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, twice, once)
			if err := e.DB.Exec(ctx, "OPTIMIZE TABLE calls FINAL"); err != nil {
				t.Fatal(err)
			}
			merged, err := queries.FailureRates(ctx, e.DB, f, 0)
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, merged, once)
		})
	}
}

func assertRows[T any](t *testing.T, got, want []T) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rows differ\n got %s\nwant %s", dump(got), dump(want))
	}
}

func dump[T any](rows []T) string {
	s := ""
	for _, r := range rows {
		s += fmt.Sprintf("\n  %+v", r)
	}
	return s
}

// TestFailureRatesRollupEqualsRaw checks that the calls_5m rollup, fed by a
// materialized view, answers exactly as the raw table, replays included.
func TestFailureRatesRollupEqualsRaw(t *testing.T) {
	ctx := context.Background()
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			fx := rows(failureFixture()...)
			e.Insert(t, fx)
			e.Insert(t, fx[:3]) // a replay of three calls
			for _, tc := range []struct {
				f    queries.Filter
				step time.Duration
			}{
				{queries.Filter{From: t0, To: t0.Add(2 * time.Hour), Tenant: "acme"}, 0},
				{queries.Filter{From: t0, To: t0.Add(4 * time.Hour)}, time.Hour},
				{queries.Filter{From: t0.Add(-time.Hour), To: t0.Add(4 * time.Hour), Tool: "search_docs"}, 5 * time.Minute},
				{queries.Filter{From: t0.Add(5 * time.Minute), To: t0.Add(75 * time.Minute)}, 10 * time.Minute},
			} {
				raw, err := queries.FailureRatesFrom(ctx, e.DB, tc.f, tc.step, false)
				if err != nil {
					t.Fatal(err)
				}
				rolled, err := queries.FailureRatesFrom(ctx, e.DB, tc.f, tc.step, true)
				if err != nil {
					t.Fatal(err)
				}
				if len(raw) == 0 {
					t.Fatalf("%+v: no rows; the fixture should produce some", tc)
				}
				assertRows(t, rolled, raw)
			}
		})
	}
}
