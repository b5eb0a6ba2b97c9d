package clustertest

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/retention"
)

// TestOverviewOverDaysOnCluster: over ranges that skip a UTC day the
// overview adds the folded hours up from calls_flags_folded and counts
// their session keys from sessions_folded (the folded form of
// queries/overview.sql, its fold branches and the sets that put those hours
// aside in its raw branches, through the Distributed tables) and answers
// on the cluster as on one server. Calls two days before the rest make the
// hours between quiet hours that the job folds, so that the ranges' middle
// day is skipped; the flags fold's rows doubled afterwards, and then a
// second key added for each folded session key, must change both answers
// alike (both read the folds).
func TestOverviewOverDaysOnCluster(t *testing.T) {
	ctx := context.Background()
	clustered, one := databases(t)
	calls, replays := randomCalls(20261207, 600, t0, 3*time.Hour)
	early, _ := randomCalls(20261208, 40, t0.Add(-49*time.Hour), 30*time.Minute)
	both := []driver.Conn{clustered.conn, one.conn}
	for _, batch := range [][]pipeline.Call{append(calls, early...), replays} {
		for _, conn := range both {
			if err := pipeline.NewWriter(conn, pipeline.NewMetrics(prometheus.NewRegistry())).WriteCalls(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
	}
	syncReplicas(t, clustered.cfg.Database)
	// The job folds hours whose last insert is ten minutes old by the
	// server's clock: it runs "now" eleven minutes ahead.
	ahead := time.Now().Add(11 * time.Minute)
	span := (time.Since(t0)/day + 4) * day
	if _, err := retention.Apply(ctx, one.conn, retention.Config{FoldRollup: span}, ahead); err != nil {
		t.Fatalf("single server: %v", err)
	}
	if _, err := retention.Apply(ctx, clustered.conn, retention.Config{FoldRollup: span, Cluster: clusterName}, ahead); err != nil {
		t.Fatalf("cluster: %v", err)
	}
	// Every hour from the first whole one of the ranges to t0's has a
	// current fold whose mark counts failures, on both.
	from, to := t0.Add(-49*time.Hour).Truncate(time.Hour).Add(time.Hour), t0.Truncate(time.Hour)
	for _, marks := range []string{
		fmt.Sprintf(`calls_flags_folded WHERE calls = 0 AND failures = 1 AND toUInt32(hour) >= %d AND toUInt32(hour) < %d
		AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds)`, from.Unix(), to.Unix()),
		fmt.Sprintf(`sessions_folded WHERE calls = 0 AND toUInt32(hour) >= %d AND toUInt32(hour) < %d
		AND (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds)`, from.Unix(), to.Unix()),
	} {
		for i, conn := range both {
			if n, want := localCount(t, conn, marks), uint64(to.Sub(from)/time.Hour); n != want {
				t.Fatalf("%d current folds' marks in %s from %s to %s on %s, want %d", n, marks[:strings.Index(marks, " ")], from, to, []string{"the cluster", "the single server"}[i], want)
			}
		}
	}
	h := func(d time.Duration) time.Time { return t0.Add(d) }
	ranges := []queries.Filter{
		{From: h(-49 * time.Hour), To: h(3 * time.Hour)},
		{From: h(-49*time.Hour + 17*time.Minute + 250*time.Millisecond), To: h(2*time.Hour + 37*time.Minute + time.Millisecond), Tenant: "acme"},
	}
	type answer struct {
		Totals queries.Totals
		Top    []queries.ToolFailures
	}
	ask := func(conn driver.Conn, f queries.Filter) answer {
		t.Helper()
		totals, top, err := queries.Overview(ctx, conn, f, 100)
		if err != nil {
			t.Fatal(err)
		}
		return answer{totals, top}
	}
	before := map[int]answer{}
	for i, f := range ranges {
		want, got := ask(one.conn, f), ask(clustered.conn, f)
		if want.Totals.Calls == 0 || want.Totals.Failures == 0 || want.Totals.Empty == 0 {
			t.Fatalf("[%s, %s): the single server counts %+v; the test tests nothing", f.From, f.To, want.Totals)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("[%s, %s) tenant %q: the cluster and the single server differ\n got %+v\nwant %+v", f.From, f.To, f.Tenant, got, want)
		}
		before[i] = want
	}
	for _, alter := range []struct {
		what, stmt string
		sessions   bool // compare the sessions only
	}{
		{"the flags fold's rows doubled", "INSERT INTO calls_flags_folded SELECT * FROM calls_flags_folded WHERE calls > 0", false},
		{"a second key for each folded session key", `INSERT INTO sessions_folded (hour, fold, tenant, server, session_key, tools, calls)
			SELECT hour, fold, tenant, server, concat(session_key, '#'), tools, calls FROM sessions_folded WHERE calls > 0`, true},
	} {
		for _, conn := range both {
			if err := conn.Exec(ctx, alter.stmt); err != nil {
				t.Fatal(err)
			}
		}
		syncReplicas(t, clustered.cfg.Database)
		for i, f := range ranges {
			want, got := ask(one.conn, f), ask(clustered.conn, f)
			changed := !reflect.DeepEqual(want, before[i])
			if alter.sessions {
				changed = want.Totals.Sessions != before[i].Totals.Sessions
			}
			if !changed || !reflect.DeepEqual(got, want) {
				t.Errorf("[%s, %s) tenant %q, %s: single server %+v (before %+v), cluster %+v; want both changed alike",
					f.From, f.To, f.Tenant, alter.what, want.Totals, before[i].Totals, got.Totals)
			}
			before[i] = want
		}
	}
}
