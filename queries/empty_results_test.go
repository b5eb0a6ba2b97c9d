package queries_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/queries"
)

func TestEmptyResults(t *testing.T) {
	var fx []call
	add := func(n int, dept string, cat classify.Category) {
		for i := 0; i < n; i++ {
			fx = append(fx, call{at: time.Duration(len(fx)) * time.Second, session: "s", tool: "search_docs",
				req: fmt.Sprint(len(fx)), category: cat, keys: []string{"department", "q"}, values: []string{dept, "差旅"}})
		}
	}
	add(4, "finace", classify.EmptyResult) // the misspelled enum value: always empty
	add(6, "finance", classify.OK)
	add(2, "finance", classify.EmptyResult)
	add(3, "finance", classify.RateLimited) // failures are not in the denominator
	fx = append(fx, call{at: time.Hour, session: "s", tool: "get_doc", req: "x", category: classify.EmptyResult,
		keys: []string{"doc_id"}, values: []string{"D-1"}})
	// A call without arguments contributes to no group.
	fx = append(fx, call{at: time.Hour, session: "s", tool: "search_docs", req: "y", category: classify.EmptyResult})

	f := queries.Filter{From: t0, To: t0.Add(2 * time.Hour)}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, rows(fx...))
			got, err := queries.EmptyResults(context.Background(), e.DB, f, queries.EmptyResultsOptions{MinCalls: 1, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, got, []queries.EmptyResult{
				{Tool: "search_docs", ArgKey: "q", ArgValue: "差旅", Calls: 12, Empty: 6, Rate: 0.5},
				{Tool: "search_docs", ArgKey: "department", ArgValue: "finace", Calls: 4, Empty: 4, Rate: 1},
				{Tool: "search_docs", ArgKey: "department", ArgValue: "finance", Calls: 8, Empty: 2, Rate: 0.25},
				{Tool: "get_doc", ArgKey: "doc_id", ArgValue: "D-1", Calls: 1, Empty: 1, Rate: 1},
			})
			got, err = queries.EmptyResults(context.Background(), e.DB, f, queries.EmptyResultsOptions{ArgKey: "department", MinCalls: 5, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, got, []queries.EmptyResult{{Tool: "search_docs", ArgKey: "department", ArgValue: "finance", Calls: 8, Empty: 2, Rate: 0.25}})
			got, err = queries.EmptyResults(context.Background(), e.DB, f, queries.EmptyResultsOptions{Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].ArgKey != "q" {
				t.Errorf("limit 1: %+v", got)
			}
		})
	}
}

func TestInvalidArgumentSpikes(t *testing.T) {
	var fx []call
	n := 0
	add := func(tool string, at time.Duration, count int, cat classify.Category, keys, values []string) {
		for i := 0; i < count; i++ {
			n++
			fx = append(fx, call{at: at + time.Duration(i)*time.Second, session: fmt.Sprint("s", n), tool: tool,
				req: "1", category: cat, keys: keys, values: values})
		}
	}
	days := []string{"city", "days"}
	// get_forecast: a 2 % baseline two days before, then 40 % in the 10:00 bucket.
	add("get_forecast", -48*time.Hour, 98, classify.OK, days, []string{"Paris", "3"})
	add("get_forecast", -47*time.Hour, 2, classify.InvalidArgument, days, []string{"Paris", "30"})
	add("get_forecast", 0, 15, classify.OK, days, []string{"Paris", "3"})
	add("get_forecast", 10*time.Minute, 8, classify.InvalidArgument, days, []string{"Paris", "30"})
	add("get_forecast", 20*time.Minute, 2, classify.InvalidArgument, days, []string{"Paris", "0"})
	// 11:00: 1 of 30 invalid — below the 5 % floor.
	add("get_forecast", time.Hour, 29, classify.OK, days, []string{"Lyon", "2"})
	add("get_forecast", time.Hour+30*time.Minute, 1, classify.InvalidArgument, days, []string{"Lyon", "20"})
	// too few calls to judge.
	add("refund", 0, 10, classify.InvalidArgument, []string{"amount"}, []string{"-5"})
	// a new tool without baseline: 2 of 20 invalid is a spike.
	add("new_tool", 0, 18, classify.OK, nil, nil)
	add("new_tool", 5*time.Minute, 2, classify.InvalidArgument, []string{"x"}, []string{"1"})

	f := queries.Filter{From: t0, To: t0.Add(2 * time.Hour)}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, rows(fx...))
			got, err := queries.InvalidArgumentSpikes(context.Background(), e.DB, f, queries.SpikeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, got, []queries.Spike{
				{Tool: "get_forecast", Time: t0, Calls: 25, Invalid: 10, Share: 0.4, BaselineShare: 0.02, Ratio: 20,
					TopArgs: []queries.ArgCount{{"city", "Paris", 10}, {"days", "30", 8}, {"days", "0", 2}}},
				{Tool: "new_tool", Time: t0, Calls: 20, Invalid: 2, Share: 0.1, BaselineShare: 0, Ratio: 0,
					TopArgs: []queries.ArgCount{{"x", "1", 2}}},
			})
			// A one-day baseline no longer sees the 2 % days: get_forecast compares with 0.
			got, err = queries.InvalidArgumentSpikes(context.Background(), e.DB, f, queries.SpikeOptions{Baseline: 24 * time.Hour, TopArgs: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[0].BaselineShare != 0 || len(got[0].TopArgs) != 1 {
				t.Errorf("one-day baseline: %+v", got)
			}
		})
	}
}
