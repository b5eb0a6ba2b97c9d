package dashboards_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/traffic"
)

// TestClientHabitsPanel checks the Retry habits by client panel against
// clientHabits, the same numbers computed in Go from the calls: the generated
// traffic, whose clients have distinct habits (traffic/session.go), over its
// whole day and over a range that cuts it at both ends, on both engines,
// from the raw calls and again with the hours folded (compact.RollupChains,
// recalls_folded). The
// habits must show in the panel: cursor re-sends the largest share of what
// should be corrected, python-sdk gives up on the largest share of what
// should be retried, and stateless-agent alone re-calls before the hint.
func TestClientHabitsPanel(t *testing.T) {
	calls := generatedCalls(t)
	tg := panelTargetOf(t, busiestTool(calls), "client_habits")
	ranges := []macroRange{
		{from: traffic.DefaultStart.Add(-time.Hour), to: traffic.DefaultStart.Add(23 * time.Hour), interval: 5 * time.Minute},
		{from: traffic.DefaultStart.Add(30 * time.Minute), to: traffic.DefaultStart.Add(2*time.Hour + 15*time.Minute), interval: 5 * time.Minute},
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, calls)
			compare := func(what string, calls []pipeline.Call) {
				for ri, r := range ranges {
					_, rows := query(t, e, tg.expand(t, e, tg.sql, r))
					var got []string
					for _, row := range rows {
						got = append(got, fmt.Sprintf("%v failures=%v correctable=%v resent=%v (%.4f) retryable=%v given_up=%v (%.4f) hinted=%v early=%v", row...))
					}
					want := clientHabits(calls, r)
					if !slices.Equal(got, want) {
						t.Errorf("%s, range %d: panel and reference differ\n panel %q\n   ref %q", what, ri, got, want)
					}
					if ri == 0 {
						requireHabits(t, rows)
					}
				}
			}
			compare("raw calls", calls)
			// Again with the complete hours' failures folded (with their
			// chains): the panel reads them from recalls_folded up to
			// $chain_bound, the rest raw.
			res, err := compact.RollupChains(context.Background(), e.DB, time.Now(), time.Since(ranges[0].from)+48*time.Hour, 0)
			if err != nil || len(res.Folded) < 4 {
				t.Fatalf("fold: %+v %v; want the traffic's hours folded", res, err)
			}
			compare("folded hours", calls)
			// An insert into an hour in the middle outdates its fold and
			// its neighbours': the bound lies inside the range, the hours
			// before it from the fold, the rest raw. The call is a success
			// of a session of its own, which changes no row.
			extra := calls[0]
			extra.SessionKey, extra.SessionID, extra.CallID = "extra-session", "extra-session", extra.CallID^1
			extra.Time = traffic.DefaultStart.Truncate(time.Hour).Add(2*time.Hour + 30*time.Minute)
			extra.TimeMs, extra.IsFailure, extra.Category = extra.Time.UnixMilli(), 0, "OK"
			e.Insert(t, []pipeline.Call{extra})
			var current []struct {
				N uint64 `ch:"n"`
			}
			if err := e.DB.Select(context.Background(), &current, "SELECT count() AS n FROM chain_current_folds WHERE hour = @hour",
				clickhouse.Named("hour", extra.Time.Truncate(time.Hour))); err != nil || len(current) != 1 || current[0].N != 0 {
				t.Fatalf("the hour of the extra call still has a current chain fold: %v %v", current, err)
			}
			compare("an hour's fold outdated", append(slices.Clone(calls), extra))
		})
	}
}

// requireHabits checks that the panel's rows over the whole generated day
// show each client's habit, so that the comparison tests a panel that tells
// the clients apart.
func requireHabits(t *testing.T, rows [][]any) {
	t.Helper()
	top := func(col int) string {
		best, name := -1.0, ""
		for _, r := range rows {
			if v := r[col].(float64); v > best {
				best, name = v, r[0].(string)
			}
		}
		return name
	}
	if c := top(4); c != "cursor" {
		t.Errorf("the largest resent_share is %s's, want cursor's", c)
	}
	if c := top(7); c != "python-sdk" {
		t.Errorf("the largest given_up_share is %s's, want python-sdk's", c)
	}
	for _, r := range rows {
		if early := r[9].(uint64); (early > 0) != (r[0] == "stateless-agent") {
			t.Errorf("%s re-called %d failures before their retry-after hint", r[0], early)
		}
	}
}

// clientHabits computes the panel's rows from calls in Go, as the panel
// defines them over r: per (tenant, server, session key, tool), the calls
// that are not continuations in time order, and for each failure in r its
// next call (within 60 s, with the same args_hash, before its retry-after
// hint), tallied by the client of its sequence and its expected
// retryability. Rows are formatted as the test formats the panel's.
func clientHabits(calls []pipeline.Call, r macroRange) []string {
	lo, hi := r.from.Unix()*1000, (r.to.Unix()+1)*1000
	groups := map[string][]pipeline.Call{}
	for _, c := range calls {
		if c.Continuation == 0 && c.TimeMs >= lo && c.TimeMs < hi+60000 && c.Time.Unix() <= r.to.Unix()+60 {
			k := strings.Join([]string{c.Tenant, c.Server, c.SessionKey, c.Tool}, "\x00")
			groups[k] = append(groups[k], c)
		}
	}
	type tally struct{ failures, correctable, resent, retryable, givenUp, hinted, early uint64 }
	by := map[string]*tally{}
	for _, g := range groups {
		slices.SortFunc(g, func(a, b pipeline.Call) int {
			return cmp.Or(cmp.Compare(a.TimeMs, b.TimeMs), strings.Compare(a.RequestID, b.RequestID), cmp.Compare(a.CallID, b.CallID))
		})
		client := g[0].Client
		for _, c := range g {
			client = min(client, c.Client)
		}
		for i, c := range g {
			if c.IsFailure != 1 || c.TimeMs < lo || c.TimeMs >= hi {
				continue
			}
			tl := by[client]
			if tl == nil {
				tl = &tally{}
				by[client] = tl
			}
			next := i+1 < len(g) && g[i+1].TimeMs-c.TimeMs <= 60000
			tl.failures++
			if c.ExpectedRetryable == 0 {
				tl.correctable++
				if next && g[i+1].ArgsHash == c.ArgsHash {
					tl.resent++
				}
			}
			if c.ExpectedRetryable == 1 {
				tl.retryable++
				if !next {
					tl.givenUp++
				}
			}
			if c.RetryAfterMs > 0 {
				tl.hinted++
				if next && g[i+1].TimeMs-c.TimeMs < c.RetryAfterMs {
					tl.early++
				}
			}
		}
	}
	share := func(n, of uint64) float64 { return float64(n) / float64(max(of, 1)) }
	var names []string
	for name := range by {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(by[b].failures, by[a].failures), strings.Compare(a, b))
	})
	var out []string
	for _, name := range names {
		tl := by[name]
		out = append(out, fmt.Sprintf("%v failures=%v correctable=%v resent=%v (%.4f) retryable=%v given_up=%v (%.4f) hinted=%v early=%v",
			name, tl.failures, tl.correctable, tl.resent, share(tl.resent, tl.correctable), tl.retryable, tl.givenUp, share(tl.givenUp, tl.retryable), tl.hinted, tl.early))
	}
	return out
}
