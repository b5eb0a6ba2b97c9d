package dashboards_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/traffic"
)

// TestClientOutcomesPanel checks the Retry outcomes by client panel against
// GET /api/v1/retry-outcomes?by=client summed per client (queries.RetryOutcomes
// with ByClient, which TestChainQueriesReadTheChainFolds holds to the
// reference implementation): the generated traffic with two retry storms
// and a quarter of it ingested again, over its whole day and over a range
// cut inside hours at both ends, on both engines, first from the raw calls
// alone, then with the complete hours' chains folded. The clients must
// differ as the generator makes them: some recover more of their retried
// chains than others.
func TestClientOutcomesPanel(t *testing.T) {
	calls, busiest := stormyCalls(t)
	day := traffic.DefaultStart.Truncate(24 * time.Hour)
	replay, _ := reingested(calls, nil)
	tg := panelTargetOf(t, busiest, "client_outcomes")
	ranges := []macroRange{
		{from: traffic.DefaultStart.Add(-time.Hour), to: traffic.DefaultStart.Add(23 * time.Hour), interval: 5 * time.Minute},
		{from: day.Add(9*time.Hour + 20*time.Minute), to: day.Add(12*time.Hour + 40*time.Minute), interval: 5 * time.Minute},
	}
	rawThenFolded(t, calls, replay, func(t *testing.T, e *chtest.Engine, folded bool) {
		for ri, r := range ranges {
			_, rows := query(t, e, tg.expand(t, e, tg.sql, r))
			var got []string
			for _, row := range rows {
				got = append(got, fmt.Sprintf("%q chains=%v success=%v fail=%v no_retry=%v recovered=%.4f attempts=%.4f changed=%v",
					row[0], row[1], row[2], row[3], row[4], toFloat(row[5]), toFloat(row[6]), row[7]))
			}
			want, shares := clientOutcomes(t, e, queries.Filter{From: r.from, To: r.to.Add(time.Second), ByClient: true})
			if !slices.Equal(got, want) {
				t.Errorf("range %d (folded %v): panel and GET /api/v1/retry-outcomes?by=client differ\n panel %q\n   api %q", ri, folded, got, want)
			}
			if len(want) < 3 || slices.Min(shares) > 0.9*slices.Max(shares) {
				t.Errorf("range %d (folded %v): %d clients, recovered shares %v: the clients do not differ, the test proves little", ri, folded, len(want), shares)
			}
		}
	})
}

// clientOutcomes sums queries.RetryOutcomes by client over tools and
// categories as the panel does, one line a client, most chains first; and
// returns each client's recovered share.
func clientOutcomes(t *testing.T, e *chtest.Engine, f queries.Filter) ([]string, []float64) {
	t.Helper()
	rows, err := queries.RetryOutcomes(context.Background(), e.DB, f, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	type sum struct {
		client                                         string
		chains, success, fail, noRetry, calls, changed uint64
	}
	by := map[string]*sum{}
	for _, r := range rows {
		s := by[r.Client]
		if s == nil {
			s = &sum{client: r.Client}
			by[r.Client] = s
		}
		s.chains += r.Chains
		s.success += r.RetryThenSuccess
		s.fail += r.RetryThenFail
		s.noRetry += r.NoRetry
		s.calls += r.Attempts
		s.changed += r.ArgsChangedChains
	}
	var sums []*sum
	for _, s := range by {
		sums = append(sums, s)
	}
	slices.SortFunc(sums, func(a, b *sum) int { return cmp.Or(cmp.Compare(b.chains, a.chains), cmp.Compare(a.client, b.client)) })
	var out []string
	var shares []float64
	for _, s := range sums {
		share := float64(s.success) / float64(max(s.success+s.fail, 1))
		out = append(out, fmt.Sprintf("%q chains=%v success=%v fail=%v no_retry=%v recovered=%.4f attempts=%.4f changed=%v",
			s.client, s.chains, s.success, s.fail, s.noRetry, share, float64(s.calls)/float64(s.chains), s.changed))
		shares = append(shares, share)
	}
	return out, shares
}
