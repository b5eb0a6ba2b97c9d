package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/chconn"
	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/queries"
)

// t0 is the start of the random traffic: 22:30 UTC, so that its three hours
// cross midnight and two daily partitions.
var t0 = time.Date(2026, 11, 29, 22, 30, 0, 0, time.UTC)

// randomCalls returns random calls shaped like those of the differential
// test in queries/retry_diff_test.go (test code cannot be imported): sessions
// across tenants, servers and tools, gaps at and around the retry windows,
// equal milliseconds, sessionless calls, continuations, misflagged calls,
// invalid-argument errors with arguments, and replays of calls, identical or
// reclassified with a later IngestedMs. The second result holds replays meant
// for a later insert; the first holds some as well.
func randomCalls(seed uint64, sessions int, start time.Time, span time.Duration) (calls, replays []pipeline.Call) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	tenants := []string{"acme", "globex", "initech"}
	servers := []string{"kb", "crm"}
	tools := []string{"search", "fetch", "update", "login"}
	failures := []classify.Category{classify.RateLimited, classify.Unavailable, classify.UpstreamTimeout,
		classify.Internal, classify.InvalidArgument, classify.NotFound, classify.Unauthenticated, classify.Unclassified}
	nonFailures := []classify.Category{classify.OK, classify.OK, classify.OK, classify.EmptyResult, classify.Cancelled}
	windows := []int64{queries.DefaultRetryWindow.Milliseconds(), 5000}
	classifyRandomly := func(c *pipeline.Call, failPct int) {
		cat := nonFailures[r.IntN(len(nonFailures))]
		if r.IntN(100) < failPct {
			cat = failures[r.IntN(len(failures))]
		}
		c.Category, c.IsFailure, c.IsError, c.RPCError, c.RPCCode = string(cat), 0, 0, 0, 0
		if cat.Failure() {
			c.IsFailure, c.IsError = 1, 1
		}
		if cat == classify.InvalidArgument {
			c.RPCError, c.RPCCode = 1, -32602
		}
		c.DeclaredRetryable = int8(r.IntN(3)) - 1
		c.ExpectedRetryable = cat.ExpectedRetryable()
		c.Misflagged = 0
		if r.IntN(100) < 5 {
			c.Misflagged = 1
		}
	}
	gap := func(storm int64) int64 {
		if storm > 0 {
			return storm - r.Int64N(2)*r.Int64N(storm/2)
		}
		w := windows[r.IntN(len(windows))]
		switch r.IntN(10) {
		case 0:
			return 0
		case 1:
			return w
		case 2:
			return w + 1
		case 3:
			return w - 1
		case 4:
			return r.Int64N(1000)
		case 5:
			return r.Int64N(10 * 60_000)
		default:
			return r.Int64N(2 * w)
		}
	}
	var id uint64
	for s := range sessions {
		tenant := tenants[r.IntN(len(tenants))]
		server := servers[r.IntN(len(servers))]
		sessionTools := tools[:1+r.IntN(len(tools))]
		sessionless := r.IntN(10) == 0
		ms := start.UnixMilli() + r.Int64N(span.Milliseconds())
		n, failPct, storm := 1+r.IntN(24), 45, int64(0)
		if r.IntN(100) < 4 { // a long retry loop of one tool
			n, failPct, storm = 40+r.IntN(40), 97, windows[r.IntN(len(windows))]
			sessionTools, sessionless = sessionTools[:1], false
		}
		for i := range n {
			ms += gap(storm)
			id++
			c := pipeline.Call{
				Time: time.UnixMilli(ms).UTC(), TimeMs: ms, DurationMs: 5, Tenant: tenant, Server: server,
				Tool: sessionTools[r.IntN(len(sessionTools))], SessionID: fmt.Sprintf("s%d", s),
				RequestID: fmt.Sprint(r.IntN(30)), CallID: id, Source: "capture",
				ArgsHash: uint64(1 + r.IntN(3)), HasResponse: 1, ContentBlocks: 1, TaxonomyVersion: "test", IngestedMs: 1,
			}
			dept := []string{"sales", "finance", "finace"}[r.IntN(3)]
			c.ArgsJSON = fmt.Sprintf(`{"dept":%q,"v":%d}`, dept, c.ArgsHash)
			c.ArgKeys, c.ArgValues = []string{"dept", "v"}, []string{dept, fmt.Sprint(c.ArgsHash)}
			c.SessionKey = c.SessionID
			if sessionless {
				c.SessionID, c.SessionKey = "", fmt.Sprintf("call:%016x", id)
			}
			if i > 0 && r.IntN(100) < 7 {
				c.Continuation = 1
			}
			classifyRandomly(&c, failPct)
			calls = append(calls, c)
			switch n := r.IntN(100); {
			case n < 2: // replayed in the same insert, unchanged
				calls = append(calls, c)
			case n < 5: // replayed later, unchanged
				replays = append(replays, c)
			case n < 8: // re-ingested later with a new classification
				d := c
				d.IngestedMs = 2 + int64(r.IntN(3))
				classifyRandomly(&d, failPct)
				replays = append(replays, d)
			}
		}
	}
	return calls, replays
}

// answers runs every analytic of the queries package over f with window.
func answers(t *testing.T, db queries.DB, f queries.Filter, window time.Duration) map[string]any {
	t.Helper()
	ctx := context.Background()
	out := map[string]any{}
	add := func(name string, v any, err error) {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = v
	}
	v1, err := queries.FailureRatesFrom(ctx, db, f, 10*time.Minute, false)
	add("failure-rates", v1, err)
	v2, err := queries.FailureRatesFrom(ctx, db, f, 10*time.Minute, true)
	add("failure-rates-rollup", v2, err)
	v3, err := queries.EmptyResults(ctx, db, f, queries.EmptyResultsOptions{Limit: 1000})
	add("empty-results", v3, err)
	v4, err := queries.InvalidArgumentSpikes(ctx, db, f, queries.SpikeOptions{Step: 10 * time.Minute, Baseline: 2 * time.Hour, MinCalls: 2, Ratio: 1.2, MinShare: 0.01})
	add("invalid-argument-spikes", v4, err)
	v5, v6, err := queries.Overview(ctx, db, f, 100)
	add("overview", v5, err)
	add("top-failing-tools", v6, err)
	v7, err := queries.RetryOutcomes(ctx, db, f, window)
	add("retry-outcomes", v7, err)
	v8, err := queries.Recalls(ctx, db, f, window)
	add("recalls", v8, err)
	v9, err := queries.Misclassifications(ctx, db, f, window, 1)
	add("misclassifications", v9, err)
	v12, err := queries.RetryLoops(ctx, db, f, window, queries.RetryLoopsOptions{MinAttempts: 2, Limit: 1000})
	add("retry-loops", v12, err)
	cf := f
	cf.ByClient = true
	v13, err := queries.RetryOutcomes(ctx, db, cf, window)
	add("retry-outcomes-by-client", v13, err)
	// Calls reclassified by a later ingest send the calls' pages to the
	// form that reads latest ingests only, whose lookup reads the
	// Distributed tables.
	failed, finace := true, "finace"
	v10, err := queries.CallList(ctx, db, f, queries.CallsOptions{Failed: &failed, Limit: 300})
	add("calls-failed", v10, err)
	v11, err := queries.CallList(ctx, db, f, queries.CallsOptions{ArgKey: "dept", ArgValue: &finace, Limit: 100})
	add("calls-finace", v11, err)
	return out
}

// TestAnalyticsMatchSingleNode writes the same random traffic, replays and
// reclassifications included, to the 2-shard cluster and to a single
// server, and requires every analytic to answer identically on both, over
// ranges, filters and retry windows chosen so that chains cross the range
// ends. It also checks the placement the answers depend on: each session on
// one shard, both shards used, and both replicas of a shard identical.
func TestAnalyticsMatchSingleNode(t *testing.T) {
	ctx := context.Background()
	clustered, one := databases(t)
	calls, replays := randomCalls(20261130, 3000, t0, 3*time.Hour)

	insert := func(conn driver.Conn, calls []pipeline.Call) {
		t.Helper()
		w := pipeline.NewWriter(conn, pipeline.NewMetrics(prometheus.NewRegistry()))
		for len(calls) > 0 {
			n := min(len(calls), 7000)
			if err := w.WriteCalls(ctx, calls[:n]); err != nil {
				t.Fatal(err)
			}
			calls = calls[n:]
		}
	}
	start := time.Now()
	insert(clustered.conn, calls)
	// The replays enter through another node: where a row lands depends on
	// its sharding key only, not on the node that received it.
	viaLast := clustered.cfg
	viaLast.Addr = cluster.Nodes[1][1].Addr
	last, err := chconn.Open(ctx, viaLast, false)
	if err != nil {
		t.Fatal(err)
	}
	defer last.Close()
	insert(last, replays)
	t.Logf("inserted %d calls and %d replays into the cluster in %s", len(calls), len(replays), time.Since(start).Round(time.Millisecond))
	insert(one.conn, calls)
	insert(one.conn, replays)
	// Definitions for the retried_non_idempotent kind, whose tool set the
	// misclassifications query reads from the tool tables; each enters the
	// cluster once.
	defs, _ := chtest.FleetDefinitions(t0)
	for _, conn := range []driver.Conn{clustered.conn, one.conn} {
		if err := pipeline.NewWriter(conn, pipeline.NewMetrics(prometheus.NewRegistry())).WriteToolRows(ctx, &defs); err != nil {
			t.Fatal(err)
		}
	}
	syncReplicas(t, clustered.cfg.Database)
	checkPlacement(t, clustered.cfg.Database, distinctCalls(calls, replays))

	h := func(d time.Duration) time.Time { return t0.Add(d) }
	cases := []struct {
		f      queries.Filter
		window time.Duration
	}{
		{queries.Filter{From: h(0), To: h(4 * time.Hour)}, queries.DefaultRetryWindow},
		{queries.Filter{From: h(time.Hour), To: h(2 * time.Hour)}, 5 * time.Second},
		{queries.Filter{From: h(30 * time.Minute), To: h(150 * time.Minute), Tenant: "acme"}, time.Minute},
		{queries.Filter{From: h(time.Hour + 500*time.Millisecond), To: h(80*time.Minute + 1500*time.Millisecond), Server: "crm", Tool: "search"}, 5 * time.Second},
	}
	for _, c := range cases {
		name := fmt.Sprintf("[%s, %s) tenant=%q server=%q tool=%q window=%s", c.f.From.Format("15:04:05.000"),
			c.f.To.Format("15:04:05.000"), c.f.Tenant, c.f.Server, c.f.Tool, c.window)
		want := answers(t, one.conn, c.f, c.window)
		got := answers(t, clustered.conn, c.f, c.window)
		if o := want["overview"].(queries.Totals); o.Calls == 0 || o.Failures == 0 {
			t.Fatalf("%s: the single server sees no calls or no failures (%+v); the test tests nothing", name, o)
		}
		if c.f.Tool == "" && !slices.ContainsFunc(want["misclassifications"].([]queries.Misclassification), func(m queries.Misclassification) bool {
			return m.Kind == queries.KindRetriedNonIdempotent
		}) {
			t.Fatalf("%s: no retried_non_idempotent row on the single server; the definitions test nothing", name)
		}
		if c.f.Tool == "" && len(want["retry-loops"].([]queries.RetryLoop)) == 0 {
			t.Fatalf("%s: no retry loop on the single server; the test tests nothing of them", name)
		}
		rows := 0
		for k, w := range want {
			if v := reflect.ValueOf(w); v.Kind() == reflect.Slice {
				rows += v.Len()
			}
			if !reflect.DeepEqual(got[k], w) {
				t.Errorf("%s %s: the cluster and the single server differ\n got %s\nwant %s", k, name, dump(got[k]), dump(w))
			}
		}
		t.Logf("%s: %d rows equal", name, rows)
	}
}

// syncReplicas waits until every replica of database has fetched what its
// peers have: an insert is acknowledged by one replica of each shard, and a
// read may go to the other.
func syncReplicas(t testing.TB, database string) {
	t.Helper()
	ctx := context.Background()
	for s := range cluster.Nodes {
		for r := range cluster.Nodes[s] {
			conn := nodeConn(t, s, r, database)
			var tables []struct {
				Name string `ch:"name"`
			}
			if err := conn.Select(ctx, &tables, "SELECT name FROM system.tables WHERE database = currentDatabase() AND engine LIKE 'Replicated%'"); err != nil {
				t.Fatal(err)
			}
			for _, tb := range tables {
				if err := conn.Exec(ctx, "SYSTEM SYNC REPLICA "+tb.Name); err != nil {
					t.Fatalf("sync replica %s on %s: %v", tb.Name, cluster.Nodes[s][r].Addr, err)
				}
			}
		}
	}
}

// checkPlacement checks how the rows of calls lie on the cluster: every
// (tenant, server, session_key) on one shard only, each shard holding at
// least a quarter of the calls, both replicas of a shard holding the same
// rows, and total calls in all (after FINAL: distinct call identities).
func checkPlacement(t *testing.T, database string, total int) {
	t.Helper()
	ctx := context.Background()
	type digest struct {
		Rows uint64 `ch:"rows_n"`
		Sum  uint64 `ch:"rows_digest"`
	}
	owner := map[string]int{}
	var rows uint64
	for s := range cluster.Nodes {
		var ds []digest
		for r := range cluster.Nodes[s] {
			var d []digest
			if err := nodeConn(t, s, r, database).Select(ctx, &d,
				"SELECT count() AS rows_n, sum(cityHash64(call_id, ingested_ms, is_failure, misflagged)) AS rows_digest FROM calls_local FINAL"); err != nil {
				t.Fatal(err)
			}
			ds = append(ds, d[0])
		}
		if ds[0] != ds[1] {
			t.Errorf("shard %d: replicas differ: %+v and %+v", s+1, ds[0], ds[1])
		}
		if ds[0].Rows < uint64(total/4) {
			t.Errorf("shard %d holds %d of %d calls; sharding by session should spread them", s+1, ds[0].Rows, total)
		}
		rows += ds[0].Rows
		var sessions []struct {
			Key string `ch:"k"`
		}
		if err := nodeConn(t, s, 0, database).Select(ctx, &sessions,
			"SELECT DISTINCT concat(tenant, '/', server, '/', session_key) AS k FROM calls_local"); err != nil {
			t.Fatal(err)
		}
		for _, k := range sessions {
			if prev, ok := owner[k.Key]; ok {
				t.Errorf("session %s is on shards %d and %d", k.Key, prev+1, s+1)
			}
			owner[k.Key] = s
		}
	}
	if rows != uint64(total) {
		t.Errorf("the shards hold %d calls, %d distinct ones were written", rows, total)
	}
}

// distinctCalls counts call identities: the sorting key of calls, whose
// copies FINAL collapses.
func distinctCalls(batches ...[]pipeline.Call) int {
	type identity struct {
		tenant, server, tool, session string
		ms                            int64
		id                            uint64
	}
	seen := map[identity]bool{}
	for _, b := range batches {
		for _, c := range b {
			seen[identity{c.Tenant, c.Server, c.Tool, c.SessionKey, c.TimeMs, c.CallID}] = true
		}
	}
	return len(seen)
}

func dump(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 3000 {
		s = s[:3000] + "…"
	}
	return strings.ReplaceAll(s, "},{", "},\n     {")
}
