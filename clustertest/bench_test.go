package clustertest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/queries"
)

var benchSessions = flag.Int("bench-sessions", 4000, "sessions of generated traffic BenchmarkIngest posts (about 9 calls each)")

// BenchmarkIngest posts generated traffic (traffic package, -bench-sessions
// sessions, about 36 000 calls by default) through one ingest instance with its default batching
// and spool settings, first into the single server, then into the 2×2
// cluster, and reports for each: calls per second from the first post until
// every call is queryable, CPU per call of the ingest process and of the
// ClickHouse servers (all of them: inserts, replication, merges), and the
// bytes of calls and of the calls_5m rollup on disk per call after merges
// (on the cluster: one copy, and all replicas). docs/scaling.md quotes it:
//
//	go test ./clustertest -run '^$' -bench Ingest -benchtime 1x [-args -bench-sessions 20000]
func BenchmarkIngest(b *testing.B) {
	all := bodies(b, 21, *benchSessions, 500)
	var want int
	for _, mode := range []string{"single", "cluster"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				clustered, one := databases(b)
				tg, servers := one, []*chtest.Server{single}
				args := []string{"-clickhouse-addr", single.Addr, "-clickhouse-database", one.cfg.Database}
				if mode == "cluster" {
					tg, servers = clustered, nil
					for _, shard := range cluster.Nodes {
						servers = append(servers, shard...)
					}
					args = ingestArgs(clustered.cfg.Database, 0)
				}
				ing := start(b, "ingest", append(args, "-spool-dir", b.TempDir())...)
				cpu0, chCPU0 := cpuSeconds(b, ing.Cmd.Process.Pid), serversCPU(b, servers)
				began := time.Now()
				st := postStream(b, &balancer{addrs: []string{ing.Addr}}, all, 8, 0)
				st.wait()
				if want == 0 {
					waitStable(b, tg.conn)
					want = len(callIDs(b, tg.conn))
				}
				waitForCalls(b, tg.conn, want, 5*time.Minute)
				took := time.Since(began)
				ingestCPU, chCPU := cpuSeconds(b, ing.Cmd.Process.Pid)-cpu0, serversCPU(b, servers)-chCPU0
				copies := 1.0
				if mode == "cluster" {
					syncReplicas(b, clustered.cfg.Database)
					copies = 2
				}
				calls, rollup := bytesOnDisk(b, mode, tg)
				for name, ms := range queryMillis(b, tg.conn) {
					b.ReportMetric(ms, name+"-ms")
				}
				b.ReportMetric(float64(want)/took.Seconds(), "calls/s")
				b.ReportMetric(ingestCPU/float64(want)*1e6, "ingest-µs-cpu/call")
				b.ReportMetric(chCPU/float64(want)*1e6, "clickhouse-µs-cpu/call")
				b.ReportMetric(calls/copies/float64(want), "bytes/call/copy")
				b.ReportMetric(rollup/copies/float64(want), "rollup-bytes/call/copy")
				b.ReportMetric(calls/float64(want), "bytes/call/all-replicas")
				b.Logf("%s: %d calls in %s; ingest %.2f CPU s, ClickHouse %.2f CPU s; calls %.1f MiB, rollup %.2f MiB on disk (all copies)",
					mode, want, took.Round(time.Millisecond), ingestCPU, chCPU, calls/(1<<20), rollup/(1<<20))
			}
		})
	}
}

// queryMillis times analytics over the traffic's range, the best of three
// runs each.
func queryMillis(b testing.TB, conn driver.Conn) map[string]float64 {
	b.Helper()
	ctx := context.Background()
	f := queries.Filter{From: trafficStart, To: trafficStart.Add(5 * time.Hour)}
	run := map[string]func() error{
		"overview": func() error { _, _, err := queries.Overview(ctx, conn, f, 10); return err },
		"failure-rates": func() error {
			_, err := queries.FailureRatesFrom(ctx, conn, f, 10*time.Minute, false)
			return err
		},
		"retry-outcomes": func() error { _, err := queries.RetryOutcomes(ctx, conn, f, queries.DefaultRetryWindow); return err },
		// The per-session stage finished on each shard, where all of a
		// session is (docs/scaling.md); checked below to answer the same.
		"retry-outcomes-shard-local": func() error {
			_, err := queries.RetryOutcomes(shardLocal(ctx), conn, f, queries.DefaultRetryWindow)
			return err
		},
	}
	got, err1 := queries.RetryOutcomes(shardLocal(ctx), conn, f, queries.DefaultRetryWindow)
	want, err2 := queries.RetryOutcomes(ctx, conn, f, queries.DefaultRetryWindow)
	if err := errors.Join(err1, err2); err != nil {
		b.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		b.Fatalf("retry outcomes with distributed_group_by_no_merge=1 differ\n got %v\nwant %v", got, want)
	}
	out := map[string]float64{}
	for name, q := range run {
		best := time.Duration(math.MaxInt64)
		for range 3 {
			began := time.Now()
			if err := q(); err != nil {
				b.Fatalf("%s: %v", name, err)
			}
			best = min(best, time.Since(began))
		}
		out[name] = float64(best.Microseconds()) / 1000
	}
	return out
}

// shardLocal has a Distributed table return each shard's finished rows
// instead of merging aggregation states on the initiator.
func shardLocal(ctx context.Context) context.Context {
	return clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"distributed_group_by_no_merge": 1}))
}

// waitStable waits until the count of calls stops changing for a second:
// the first run learns the number of calls the traffic holds.
func waitStable(b testing.TB, conn driver.Conn) {
	b.Helper()
	last, since := -1, time.Now()
	for time.Since(since) < time.Second {
		n := len(callIDs(b, conn))
		if n != last {
			last, since = n, time.Now()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// bytesOnDisk merges calls and calls_5m (OPTIMIZE FINAL on each shard) and
// returns their active parts' bytes on disk, summed over every node.
func bytesOnDisk(b testing.TB, mode string, tg target) (calls, rollup float64) {
	b.Helper()
	ctx := context.Background()
	var nodes []driver.Conn
	suffix := ""
	if mode == "cluster" {
		suffix = "_local"
		for s := range cluster.Nodes {
			for r := range cluster.Nodes[s] {
				nodes = append(nodes, nodeConn(b, s, r, tg.cfg.Database))
			}
			for _, tbl := range []string{"calls", "calls_5m"} {
				if err := nodeConn(b, s, 0, tg.cfg.Database).Exec(ctx, "OPTIMIZE TABLE "+tbl+suffix+" FINAL"); err != nil {
					b.Fatal(err)
				}
			}
		}
		syncReplicas(b, tg.cfg.Database)
	} else {
		nodes = []driver.Conn{tg.conn}
		for _, tbl := range []string{"calls", "calls_5m"} {
			if err := tg.conn.Exec(ctx, "OPTIMIZE TABLE "+tbl+" FINAL"); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, conn := range nodes {
		var rows []struct {
			Table string `ch:"table"`
			Bytes uint64 `ch:"bytes"`
		}
		if err := conn.Select(ctx, &rows, "SELECT table, sum(bytes_on_disk) AS bytes FROM system.parts WHERE database = currentDatabase() AND active GROUP BY table"); err != nil {
			b.Fatal(err)
		}
		for _, r := range rows {
			switch r.Table {
			case "calls" + suffix:
				calls += float64(r.Bytes)
			case "calls_5m" + suffix:
				rollup += float64(r.Bytes)
			}
		}
	}
	return calls, rollup
}

// cpuSeconds returns the user and system CPU time pid has used.
func cpuSeconds(b testing.TB, pid int) float64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name in parentheses: state is field 3,
	// utime and stime are fields 14 and 15, in clock ticks (100 per second
	// on Linux).
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("parse /proc/%d/stat: %s", pid, raw)
	}
	return (ut + st) / 100
}

func serversCPU(b testing.TB, servers []*chtest.Server) float64 {
	sum := 0.0
	for _, s := range servers {
		sum += cpuSeconds(b, s.Pid())
	}
	return sum
}
