package queries_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/queries"
)

func TestOverview(t *testing.T) {
	f := queries.Filter{From: t0, To: t0.Add(2 * time.Hour), Tenant: "acme"}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			fx := rows(failureFixture()...)
			fx[4].Misflagged = 1 // the empty result came with isError true
			e.Insert(t, fx)
			got, err := queries.OverviewTotals(context.Background(), e.DB, f)
			if err != nil {
				t.Fatal(err)
			}
			want := queries.Totals{Calls: 7, Failures: 4, NonFailed: 3, Empty: 1, Misflagged: 1, Tools: 2, Sessions: 2,
				FailureRate: 4.0 / 7, EmptyRate: 1.0 / 3}
			if got != want {
				t.Errorf("totals\n got %+v\nwant %+v", got, want)
			}
			top, err := queries.TopFailingTools(context.Background(), e.DB, f, 10)
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, top, []queries.ToolFailures{
				{Tool: "search_docs", Calls: 5, Failures: 3, Rate: 0.6},
				{Tool: "get_doc", Calls: 2, Failures: 1, Rate: 0.5},
			})
			empty, err := queries.OverviewTotals(context.Background(), e.DB, queries.Filter{From: t0.Add(-time.Hour), To: t0})
			if err != nil {
				t.Fatal(err)
			}
			if empty != (queries.Totals{}) {
				t.Errorf("empty range: %+v", empty)
			}
		})
	}
}
