package clustertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcplens/mcplens/chtest"
)

// TestDDLWorkerWatchdogRestartsTheNode: when a node's error log says its
// DDL worker stopped (the line ClickHouse 18.16 writes, written here into
// the log of a node whose worker is fine), the suite's watchdog restarts
// that node, and ON CLUSTER statements run on every node afterwards. The
// race that stops the worker for real cannot be caused on demand.
func TestDDLWorkerWatchdogRestartsTheNode(t *testing.T) {
	node := cluster.Nodes[1][1]
	pid, before := node.Pid(), ddlReports.Load()
	if pid == 0 {
		t.Fatalf("node %s is not running", node.Addr)
	}
	f, err := os.OpenFile(filepath.Join(node.Dir, "log", "error.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	line := "2026.12.06 18:00:00.000000 [ 33 ] {} <Error> DDLWorker: Unexpected ZooKeeper error: Code: 999, e.displayText() = Coordination::Exception: Node exists (written by TestDDLWorkerWatchdogRestartsTheNode). Terminating.\n"
	if _, err := f.WriteString(line); err != nil {
		t.Fatal(err)
	}
	f.Close()
	deadline := time.Now().Add(2 * time.Minute)
	for ddlReports.Load() == before {
		if time.Now().After(deadline) {
			t.Fatalf("node %s not restarted 2 minutes after its log said its DDL worker stopped", node.Addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if now := node.Pid(); now == 0 || now == pid {
		t.Fatalf("node %s: pid %d before, %d after the watchdog's restart", node.Addr, pid, now)
	}
	conn, err := chtest.Open(cluster.Nodes[0][0].Addr, "default")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	name := fmt.Sprintf("ddl_watchdog_%d", os.Getpid())
	restarted := nodeConn(t, 1, 1, "default")
	for _, step := range []struct {
		q    string
		want uint64 // databases of that name on the restarted node after it
	}{{"CREATE DATABASE " + name + " ON CLUSTER " + clusterName, 1}, {"DROP DATABASE " + name + " ON CLUSTER " + clusterName, 0}} {
		if err := conn.Exec(ctx, step.q); err != nil {
			t.Fatalf("%s after the restart: %v", step.q, err)
		}
		var n uint64
		if err := restarted.QueryRow(ctx, "SELECT count() FROM system.databases WHERE name = @name", clickhouse.Named("name", name)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != step.want {
			t.Fatalf("after %s: %d databases %s on the restarted node, want %d", step.q, n, name, step.want)
		}
	}
}
