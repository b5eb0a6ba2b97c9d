package clustertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/binproc"
	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/retention"
)

const day = 24 * time.Hour

// TestRetentionJobOnCluster runs the retention job (retention.Apply, as
// `ingest serve` and `ingest retention` do in cluster mode) on the cluster
// and the same job on the single server, over the same traffic, and
// requires after each run that every analytic answers on the cluster as on
// the single server, which has done the same:
//
//  1. the complete hours and their chains folded: the cluster records the
//     same folds, and every replica holds every row of every fold it
//     records, without waiting for replication; and the old tool sightings
//     folded: the cluster keeps the same ones;
//  2. a late call into a folded hour while a replica is down: the fold of
//     that hour fails (its inserts need every replica) and records nothing,
//     so readers keep the raw calls for it;
//  3. the replica back: the hour is folded again, and its superseded fold
//     deleted on every shard;
//  4. the raw calls' first day past the retention: its partitions dropped
//     on every node, the next day kept.
func TestRetentionJobOnCluster(t *testing.T) {
	ctx := context.Background()
	clustered, one := databases(t)
	db := clustered.cfg.Database
	calls, replays := randomCalls(20261205, 1200, t0, 3*time.Hour)
	// A few calls from 04:30, three hours after the rest begin to end:
	// 03:00, between their hours, is quiet, and its empty fold is recorded
	// on the cluster as on the single server.
	later, _ := randomCalls(20261206, 20, t0.Add(6*time.Hour), 30*time.Minute)
	calls = append(calls, later...)
	both := []driver.Conn{clustered.conn, one.conn}
	write := func(calls []pipeline.Call) {
		t.Helper()
		for _, conn := range both {
			w := pipeline.NewWriter(conn, pipeline.NewMetrics(prometheus.NewRegistry()))
			if err := w.WriteCalls(ctx, calls); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(calls)
	write(replays)
	// The fleet's definitions, and a day of hourly sightings of one tool
	// long past whose definition flaps: the sightings fold keeps the ends
	// of the day's runs, which no shard's share of the day shows alone.
	rows, _ := chtest.FleetDefinitions(t0)
	old := t0.Add(-9 * day).Truncate(day)
	for h, hash := range []uint64{1, 1, 1, 2, 1, 2, 2, 2, 1, 1, 2, 2, 2, 2, 1, 2, 1, 1, 1, 1, 2, 2, 1, 1} {
		at := old.Add(time.Duration(h)*time.Hour + 15*time.Minute)
		rows.Sightings = append(rows.Sightings, pipeline.ToolSighting{Time: at, TimeMs: at.UnixMilli(), Tenant: "umbrella",
			Server: "kb", Tool: "probe", DefinitionHash: hash, IngestedMs: 1})
	}
	for _, conn := range both {
		if err := pipeline.NewWriter(conn, pipeline.NewMetrics(prometheus.NewRegistry())).WriteToolRows(ctx, &rows); err != nil {
			t.Fatal(err)
		}
	}
	syncReplicas(t, db)

	// The job folds hours whose last insert is ten minutes old by the
	// server's clock: it runs "now" eleven minutes ahead. Its span reaches
	// back past t0.
	ahead := func() time.Time { return time.Now().Add(11 * time.Minute) }
	span := (time.Since(t0)/day + 2) * day
	fold := retention.Config{FoldRollup: span, Sightings: 7 * day}
	apply := func(conn driver.Conn, cfg retention.Config, cluster string) (retention.Result, error) {
		cfg.Cluster = cluster
		return retention.Apply(ctx, conn, cfg, ahead())
	}
	compare := func(step string) {
		t.Helper()
		h := func(d time.Duration) time.Time { return t0.Add(d) }
		for _, f := range []queries.Filter{
			{From: h(-time.Hour), To: h(4 * time.Hour)},
			{From: h(30 * time.Minute), To: h(150 * time.Minute), Tenant: "acme"},
		} {
			want, got := answers(t, one.conn, f, queries.DefaultRetryWindow), answers(t, clustered.conn, f, queries.DefaultRetryWindow)
			for k, w := range want {
				if !reflect.DeepEqual(got[k], w) {
					t.Errorf("%s, %s over [%s, %s) tenant %q: the cluster and the single server differ\n got %s\nwant %s",
						step, k, f.From.Format("15:04"), f.To.Format("15:04"), f.Tenant, dump(got[k]), dump(w))
				}
			}
		}
	}

	// 1. Fold.
	resOne, err := apply(one.conn, fold, "")
	if err != nil {
		t.Fatalf("single server: %v", err)
	}
	res, err := apply(clustered.conn, fold, clusterName)
	if err != nil {
		t.Fatalf("cluster: %v", err)
	}
	t.Logf("cluster, first run: %s", strings.Join(res.Changed, "; "))
	if !reflect.DeepEqual(changedTables(res), changedTables(resOne)) || len(res.Changed) < 3 {
		t.Fatalf("the cluster's run changed %q, the single server's %q; want the same folds (rollup, chains, sightings)", res.Changed, resOne.Changed)
	}
	quiet := "calls_5m_folded: recorded 1 quiet hours (no calls) from " + t0.Add(270*time.Minute).Format(time.RFC3339)
	if !slices.ContainsFunc(res.Changed, func(c string) bool { return strings.HasPrefix(c, quiet) }) {
		t.Errorf("the cluster's run changed %q; want %q...", res.Changed, quiet)
	}
	folds := recordedFolds(t, one.conn)
	if got := recordedFolds(t, clustered.conn); len(folds) < 4 || !reflect.DeepEqual(got, folds) {
		t.Fatalf("folds recorded on the cluster %v, on the single server %v; want the same, at least four hours", got, folds)
	}
	// Every replica holds every row of the recorded folds at once: the
	// quorum, not replication later on.
	for _, table := range []string{"calls_5m_folded", "chains_folded", "recalls_folded", "calls_1h_folded"} {
		var per []uint64
		for s := range cluster.Nodes {
			for r := range cluster.Nodes[s] {
				per = append(per, localCount(t, nodeConn(t, s, r, db), table+"_local"))
			}
		}
		if per[0] == 0 || per[0] != per[1] || per[2] != per[3] || per[2] == 0 {
			t.Errorf("%s_local rows by node (shard 1's replicas, then shard 2's): %v; want both shards' replicas equal and none empty", table, per)
		}
	}
	if got, want := sightings(t, clustered.conn), sightings(t, one.conn); len(want) >= 24 || !reflect.DeepEqual(got, want) {
		t.Errorf("tool sightings kept on the cluster %v, on the single server %v; want the same, fewer than the 24 of the folded day", got, want)
	}
	compare("folded")

	// lateCall writes, to both, a new call at t0+at into a folded hour,
	// and waits until both replicas of its shard hold it: the insert is
	// acknowledged by one replica, which step 2 may then stop before the
	// other has fetched the call, and the job's reads may go to either.
	lateCall := func(i int, at time.Duration) pipeline.Call {
		c := calls[i]
		c.CallID, c.TimeMs = c.CallID^0x5eed, t0.Add(at).UnixMilli()
		c.Time = time.UnixMilli(c.TimeMs).UTC()
		write([]pipeline.Call{c})
		syncReplicas(t, db)
		return c
	}

	// 2. A late call into a folded hour while a replica of shard 2 is down.
	late := lateCall(len(calls)/2, 70*time.Minute)
	victim := cluster.Nodes[1][1]
	victim.Stop()
	restarted := false
	defer func() {
		if !restarted {
			victim.Restart(context.Background())
		}
	}()
	waitReplicaGone(t, nodeConn(t, 1, 0, db))
	if _, err := apply(clustered.conn, fold, clusterName); err == nil || !strings.Contains(err.Error(), "replicas") {
		t.Fatalf("fold with a replica down: %v; want the quorum's refusal", err)
	}
	if got := recordedFolds(t, clustered.conn); !reflect.DeepEqual(got, folds) {
		t.Errorf("a fold was recorded with a replica down: %v, before %v", got, folds)
	}
	if _, err := apply(one.conn, fold, ""); err != nil {
		t.Fatal(err)
	}
	// Readers on the cluster take the late hour from the raw calls; the
	// single server has folded it again.
	compare("late call, replica down")

	// 3. The replica back: the late hour folded again, its first fold
	// superseded.
	if err := victim.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	restarted = true
	syncReplicas(t, db)
	lateHour := time.UnixMilli(late.TimeMs).UTC().Truncate(time.Hour)
	superseded := foldIDs(t, clustered.conn, lateHour)
	res, err = apply(clustered.conn, fold, clusterName)
	if err != nil {
		t.Fatalf("cluster, the replica back: %v", err)
	}
	t.Logf("cluster, the replica back: %s", strings.Join(res.Changed, "; "))
	if !strings.Contains(strings.Join(res.Changed, "\n"), "calls_5m_folded: deleting 1 superseded folds") || len(superseded) != 1 {
		t.Errorf("the late hour's refold deleted %q, of folds %v; want its one earlier fold", res.Changed, superseded)
	}
	if got, want := currentFolds(t, clustered.conn), currentFolds(t, one.conn); len(got) < 4 || !reflect.DeepEqual(got, want) {
		t.Errorf("after the refold readers on the cluster take the folds %v, on the single server %v", got, want)
	}
	compare("refolded")
	// On 18.16 the last part written with a quorum in a partition is
	// neither merged nor mutated until the next quorum insert there: the
	// superseded fold's rows go once another hour of their partition is
	// folded (in a running job, within the hour). The other hour is 22:00
	// of the same day: calls_5m_folded is partitioned by day, and a late
	// call past midnight (as this one was) refolded an hour of the next
	// day only, which left the deletion to chance (a clean clone's run saw
	// a row of the superseded fold still there a minute later).
	lateCall(len(calls)/3, -20*time.Minute)
	if _, err := apply(one.conn, fold, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(clustered.conn, fold, clusterName); err != nil {
		t.Fatal(err)
	}
	waited := time.Now()
	deadline := waited.Add(2 * time.Minute)
	for s := range cluster.Nodes {
		for r := range cluster.Nodes[s] {
			conn := nodeConn(t, s, r, db)
			for {
				n := localCount(t, conn, "calls_5m_folded_local WHERE fold = "+superseded[0]) +
					localCount(t, conn, "calls_5m_folds_local WHERE fold = "+superseded[0])
				if n == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s still holds %d rows of the superseded fold %s after the next fold", cluster.Nodes[s][r].Addr, n, superseded[0])
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	t.Logf("the superseded fold's rows gone from every node %s after the next fold", time.Since(waited).Round(time.Millisecond))
	compare("another hour refolded")

	// 4. Raw retention, with its cutoff on 11-30 so that 11-29's partitions
	// go, run on the cluster as an operator does: `ingest retention` in
	// cluster mode.
	keep := retention.Config{Raw: time.Now().UTC().Truncate(day).Sub(t0.Truncate(day).Add(day))}
	job := append(ingestArgs(db, 2), "-retention", fmt.Sprintf("%dh", int(keep.Raw.Hours())), "-rollup-retention", "0", "-rollup-fold", "0")
	out, err := exec.Command(filepath.Join(bin, "ingest"), append([]string{"retention"}, job...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ingest retention on the cluster: %v\n%s", err, out)
	}
	if _, err := retention.Apply(ctx, one.conn, keep, time.Now()); err != nil {
		t.Fatal(err)
	}
	t.Logf("ingest retention on the cluster, raw calls kept %s:\n%s", keep.Raw, out)
	if !strings.Contains(string(out), "calls: dropped partition 20261129\n") {
		t.Errorf("ingest retention dropped %q; want calls' partition 20261129", out)
	}
	syncReplicas(t, db)
	for s := range cluster.Nodes {
		for r := range cluster.Nodes[s] {
			conn := nodeConn(t, s, r, db)
			if n := localCount(t, conn, "calls_local WHERE toYYYYMMDD(ts) = 20261129"); n != 0 {
				t.Errorf("node %s still holds %d calls of 11-29", cluster.Nodes[s][r].Addr, n)
			}
			if n := localCount(t, conn, "calls_local WHERE toYYYYMMDD(ts) = 20261130"); n == 0 {
				t.Errorf("node %s holds no calls of 11-30", cluster.Nodes[s][r].Addr)
			}
		}
	}
	compare("11-29 dropped")
}

// waitReplicaGone waits until peer, the other replica of a stopped node's
// shard, counts one live replica for every replicated table of its
// database: the stopped node's ZooKeeper session has expired (6 s after
// its last heartbeat, later on a loaded machine), as after any real
// crash: a quorum insert now fails at once instead of waiting for it.
func waitReplicaGone(t *testing.T, peer driver.Conn) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(time.Minute)
	for {
		var rows []struct {
			Tables uint64 `ch:"tables"`
			Max    uint8  `ch:"most_active"`
		}
		if err := peer.Select(context.Background(), &rows,
			"SELECT count() AS tables, max(active_replicas) AS most_active FROM system.replicas WHERE database = currentDatabase()"); err != nil {
			t.Fatal(err)
		}
		if len(rows) == 1 && rows[0].Tables > 0 && rows[0].Max == 1 {
			t.Logf("the stopped replica's peer counted it gone after %s", time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the replica stopped, its peer still counts live replicas %+v; want 1 for every table", rows)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// changedTables is the table each change of res names, in order.
func changedTables(res retention.Result) []string {
	var out []string
	for _, c := range res.Changed {
		out = append(out, strings.SplitN(c, ":", 2)[0])
	}
	return out
}

// localCount counts the rows of from (a table and any WHERE).
func localCount(t testing.TB, conn driver.Conn, from string) uint64 {
	t.Helper()
	var n []struct {
		N uint64 `ch:"n"`
	}
	if err := conn.Select(context.Background(), &n, "SELECT count() AS n FROM "+from); err != nil {
		t.Fatalf("count %s: %v", from, err)
	}
	return n[0].N
}

// sightings lists the tool sightings of the tool whose definition flaps.
func sightings(t testing.TB, conn driver.Conn) []string {
	return column(t, conn, `SELECT DISTINCT concat(toString(ts_ms), ' ', toString(definition_hash)) AS s
FROM tool_sightings WHERE tenant = 'umbrella' ORDER BY s`)
}

// foldIDs lists the rollup folds recorded for hour.
func foldIDs(t testing.TB, conn driver.Conn, hour time.Time) []string {
	return column(t, conn, "SELECT DISTINCT toString(fold) AS s FROM calls_5m_folds WHERE hour = toDateTime(@h, 'UTC') ORDER BY s",
		clickhouse.Named("h", hour.Unix()))
}

// currentFolds lists the hours and insert counts of the folds readers
// take, rollup and chains, in order.
func currentFolds(t testing.TB, conn driver.Conn) []string {
	return column(t, conn, `SELECT DISTINCT s FROM (
  SELECT concat('rollup ', toString(toUInt32(hour)), ' at ', toString(inserts)) AS s
  FROM calls_5m_folds WHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM calls_5m_current_folds)
  UNION ALL
  SELECT concat('chains ', toString(toUInt32(hour)), ' at ', toString(inserts)) AS s
  FROM chain_folds WHERE (hour, fold) GLOBAL IN (SELECT hour, fold FROM chain_current_folds)
) ORDER BY s`)
}

// recordedFolds lists the hours and insert counts of the folds recorded,
// rollup and chains, in order.
func recordedFolds(t testing.TB, conn driver.Conn) []string {
	return column(t, conn, `SELECT s FROM (
  SELECT DISTINCT concat('rollup ', toString(toUInt32(hour)), ' at ', toString(inserts)) AS s FROM calls_5m_folds
  UNION ALL
  SELECT DISTINCT concat('chains ', toString(toUInt32(hour)), ' at ', toString(inserts)) AS s FROM chain_folds
) ORDER BY s`)
}

// column runs query, whose one column is the string s, and returns it.
func column(t testing.TB, conn driver.Conn, query string, args ...any) []string {
	t.Helper()
	var rows []struct {
		S string `ch:"s"`
	}
	if err := conn.Select(context.Background(), &rows, query, args...); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.S
	}
	return out
}

// TestReplayFoldOnCluster: `ingest replay -fold` in cluster mode merges
// each day it wrote on every shard, so that a capture replayed over calls
// stored before leaves one row per call on every node, as on one server.
// Merges are stopped while the copies are written, so that the test sees
// them before the fold.
func TestReplayFoldOnCluster(t *testing.T) {
	ctx := context.Background()
	clustered, _ := databases(t)
	db := clustered.cfg.Database
	file := filepath.Join(t.TempDir(), "calls.ndjson")
	sample, err := exec.Command(filepath.Join(bin, "ingest"), "sample", "-sessions", "300").Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, sample, 0o644); err != nil {
		t.Fatal(err)
	}
	merges := func(verb string) {
		t.Helper()
		for s := range cluster.Nodes {
			for r := range cluster.Nodes[s] {
				if err := nodeConn(t, s, r, db).Exec(ctx, "SYSTEM "+verb+" MERGES calls_local"); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	replay := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(filepath.Join(bin, "ingest"), append(append([]string{"replay"}, args...), append(ingestArgs(db, 1), file)...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ingest replay %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	merges("STOP")
	replay()
	replay()
	syncReplicas(t, db)
	for s := range cluster.Nodes {
		conn := nodeConn(t, s, 0, db)
		if rows, calls := localCount(t, conn, "calls_local"), localCount(t, conn, "calls_local FINAL"); calls == 0 || rows != 2*calls {
			t.Fatalf("shard %d before the fold: %d rows of %d calls; want every call twice", s+1, rows, calls)
		}
	}
	merges("START")
	out := replay("-fold")
	t.Logf("ingest replay -fold:\n%s", binproc.Tail(out, 600))
	if !strings.Contains(out, "replay: folded partition ") {
		t.Fatalf("ingest replay -fold folded nothing:\n%s", out)
	}
	syncReplicas(t, db)
	var total uint64
	for s := range cluster.Nodes {
		for r := range cluster.Nodes[s] {
			conn := nodeConn(t, s, r, db)
			rows, calls := localCount(t, conn, "calls_local"), localCount(t, conn, "calls_local FINAL")
			if rows != calls {
				t.Errorf("node %s after the fold: %d rows of %d calls; want one row a call", cluster.Nodes[s][r].Addr, rows, calls)
			}
			if r == 0 {
				total += calls
			}
		}
	}
	if want := localCount(t, clustered.conn, "(SELECT DISTINCT tenant, server, tool, session_key, ts_ms, call_id FROM calls)"); total != want || total == 0 {
		t.Errorf("the shards hold %d calls after the fold; %d distinct were replayed", total, want)
	}
}

// TestServeRunsTheJobOnCluster: `ingest serve` in cluster mode runs the
// retention job with its defaults (once at start, then hourly): calls 40
// days old are gone from every node after its first run (-retention 30
// days), and the run counts as ok.
func TestServeRunsTheJobOnCluster(t *testing.T) {
	ctx := context.Background()
	clustered, _ := databases(t)
	db := clustered.cfg.Database
	old, _ := randomCalls(20261206, 60, time.Now().UTC().Add(-40*day), time.Hour)
	if err := pipeline.NewWriter(clustered.conn, pipeline.NewMetrics(prometheus.NewRegistry())).WriteCalls(ctx, old); err != nil {
		t.Fatal(err)
	}
	if n := localCount(t, clustered.conn, "calls"); n == 0 {
		t.Fatal("no calls written; the test tests nothing")
	}
	p := start(t, "ingest", append(ingestArgs(db, 0), "-spool-dir", t.TempDir(), "-retention-every", "1h")...)
	deadline := time.Now().Add(2 * time.Minute)
	for metricSum(t, p.Addr, `mcplens_retention_runs_total{result="ok"}`) < 1 {
		if n := metricSum(t, p.Addr, `mcplens_retention_runs_total{result="error"}`); n > 0 || time.Now().After(deadline) {
			t.Fatalf("the job's first run: %v errors, no success\n%s", n, binproc.Tail(p.Log.String(), 3000))
		}
		time.Sleep(200 * time.Millisecond)
	}
	syncReplicas(t, db)
	for s := range cluster.Nodes {
		for r := range cluster.Nodes[s] {
			if n := localCount(t, nodeConn(t, s, r, db), "calls_local"); n != 0 {
				t.Errorf("node %s holds %d calls 40 days old after the job's run", cluster.Nodes[s][r].Addr, n)
			}
		}
	}
}
