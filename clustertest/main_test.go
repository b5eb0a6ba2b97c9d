// Package clustertest runs mcplens on ClickHouse's own distribution: a
// 2-shard × 2-replica cluster of ClickHouse 18.16 servers coordinated by
// ZooKeeper, all on loopback ports, next to a single server that holds the
// same data in single-node mode. The tests check that the analytics answer
// the same on both, that a replica can die and return while ingest goes
// on, and that an ingest instance can die mid-stream while its client
// retries elsewhere, with every call counted once (docs/scaling.md).
package clustertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcplens/mcplens/chconn"
	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/schema"
)

// clusterName is the cluster in the servers' <remote_servers>.
const clusterName = "mcplens"

var (
	bin     string          // directory of the built ingest and api binaries
	cluster *chtest.Cluster // 2 shards × 2 replicas
	single  *chtest.Server  // one server: the single-node reference
	dbSeq   atomic.Int64
	// ddlReports counts the watchdog's reports that ClickHouse 18.16's
	// DDL worker stopped (chtest.Cluster.WatchDDLWorkers).
	ddlReports atomic.Int64
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "mcplens-cluster-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The servers' logs are kept when a test failed or the cluster did not
	// start; the binaries never.
	code, keep := 1, false
	defer func() {
		if code == 0 || !keep {
			os.RemoveAll(dir)
			return
		}
		os.RemoveAll(bin)
		fmt.Fprintf(os.Stderr, "clustertest: logs kept in %s\n", dir)
	}()
	bin = filepath.Join(dir, "bin")
	for _, c := range []string{"ingest", "api"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(bin, c), "../cmd/"+c).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "clustertest: build %s: %v\n%s", c, err, out)
			return 1
		}
	}
	ctx := context.Background()
	start := time.Now()
	keep = true
	// The ports are free when chosen and taken when the servers start: a
	// process of another test may take one in between, so start again on
	// new ports before giving up.
	for attempt := 1; ; attempt++ {
		cluster, err = chtest.StartCluster(ctx, filepath.Join(dir, fmt.Sprintf("cluster%d", attempt)), clusterName, 2, 2)
		if err == nil {
			break
		}
		if attempt == 3 {
			fmt.Fprintln(os.Stderr, "clustertest: ClickHouse cluster unavailable:", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "clustertest: start cluster (attempt %d): %v\n", attempt, err)
	}
	defer cluster.Stop()
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		cluster.WatchDDLWorkers(watchCtx, time.Second, func(msg string) {
			ddlReports.Add(1)
			fmt.Fprintln(os.Stderr, "clustertest:", msg)
		})
	}()
	defer func() { stopWatch(); <-watched }()
	single, err = chtest.StartServer(ctx, filepath.Join(dir, "single"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "clustertest: ClickHouse server unavailable:", err)
		return 1
	}
	defer single.Stop()
	fmt.Printf("clustertest: ZooKeeper, 2×2 cluster (%s) and a single server up in %s\n",
		strings.Join(cluster.Addrs(), ", "), time.Since(start).Round(time.Millisecond))
	code = m.Run()
	return code
}

// target is one database under test: in cluster mode on the cluster, or on
// the single server.
type target struct {
	cfg  chconn.Config
	conn driver.Conn
}

// databases creates a fresh database with the same name on the cluster and
// on the single server and migrates both the way production does, with
// `ingest migrate` (in cluster mode for the cluster).
func databases(t testing.TB) (clustered, one target) {
	t.Helper()
	name := fmt.Sprintf("ct_%d_%d", os.Getpid(), dbSeq.Add(1))
	base := chconn.Config{Database: name, User: "default", DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Minute}
	clustered.cfg, one.cfg = base, base
	clustered.cfg.Addr, clustered.cfg.Cluster = strings.Join(cluster.Addrs(), ","), clusterName
	one.cfg.Addr = single.Addr
	for _, tg := range []*target{&clustered, &one} {
		start := time.Now()
		args := []string{"migrate", "-clickhouse-addr", tg.cfg.Addr, "-clickhouse-database", name}
		if tg.cfg.Cluster != "" {
			args = append(args, "-clickhouse-cluster", tg.cfg.Cluster)
		}
		out, err := exec.Command(filepath.Join(bin, "ingest"), args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ingest %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		conn, err := chconn.Open(context.Background(), tg.cfg, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if err := schema.Ready(context.Background(), conn); err != nil {
			t.Fatalf("%s after ingest migrate: %v\n%s", tg.cfg.String(), err, out)
		}
		t.Logf("ingest migrate %s: %s", tg.cfg.String(), time.Since(start).Round(time.Millisecond))
		tg.conn = conn
	}
	return clustered, one
}

// nodeConn connects to one node of the cluster, in the test's database.
func nodeConn(t testing.TB, shard, replica int, database string) driver.Conn {
	t.Helper()
	conn, err := chtest.Open(cluster.Nodes[shard][replica].Addr, database)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
