package chtest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFreePortsAreOutsideTheEphemeralRange pins where the harness's ports
// come from: distinct, free, and below the kernel's ephemeral range, which
// outgoing connections take their local ports from; on a machine whose
// range leaves no room below it (the kernel's picks then), anywhere.
func TestFreePortsAreOutsideTheEphemeralRange(t *testing.T) {
	lo, start := 10000, ephemeralStart()
	if start-lo < 1000 {
		t.Logf("ephemeral range starts at %d: no room below it, FreePorts takes the kernel's picks", start)
		lo, start = 1, 65536
	}
	ports, err := FreePorts(60)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lo || p >= start {
			t.Errorf("port %d outside %d-%d", p, lo, start-1)
		}
		if seen[p] {
			t.Errorf("port %d picked twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d is not free after the pick: %v", p, err)
			continue
		}
		l.Close()
	}
	if len(ports) != 60 {
		t.Fatalf("%d ports, want 60", len(ports))
	}
}

// takenFirst returns a port picker whose first pick hands out port (held
// by the test) in the first place, and picks freely after that, and a
// count of its picks.
func takenFirst(port int) (portPicker, *int) {
	picks := 0
	return func(n int) ([]int, error) {
		picks++
		ports, err := FreePorts(n)
		if err == nil && picks == 1 {
			ports[0] = port
		}
		return ports, err
	}, &picks
}

// holdPort listens on a loopback port until the test ends: a port another
// process took between the harness's pick and the server's bind.
func holdPort(t *testing.T) int {
	t.Helper()
	ports, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return ports[0]
}

// setAsideSays fails t unless the log set aside after the first attempt
// says why that attempt failed.
func setAsideSays(t *testing.T, log string) {
	t.Helper()
	b, err := os.ReadFile(log + ".attempt1")
	if err != nil {
		t.Fatalf("the first attempt's log was not set aside: %v", err)
	}
	if !strings.Contains(strings.ToLower(string(b)), "address already in use") {
		t.Fatalf("the first attempt's log does not say its port was taken:\n%s", b)
	}
}

// TestServersStartAgainWhenTheirPortIsTaken hands a real clickhouse-server
// (18.16, which exits with status 70 when it cannot bind), ZooKeeper and a
// one-node cluster a port that is taken: each starts on the next pick, with
// the failed attempt's log kept beside the new one.
func TestServersStartAgainWhenTheirPortIsTaken(t *testing.T) {
	ctx := context.Background()
	t.Run("server", func(t *testing.T) {
		taken := holdPort(t)
		pick, picks := takenFirst(taken)
		s, err := startServer(ctx, t.TempDir(), pick)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Stop()
		if *picks != 2 || s.Addr == net.JoinHostPort("127.0.0.1", strconv.Itoa(taken)) {
			t.Fatalf("%d picks, serving on %s (taken %d); want a second pick", *picks, s.Addr, taken)
		}
		setAsideSays(t, s.errorLog())
	})
	t.Run("zookeeper", func(t *testing.T) {
		taken := holdPort(t)
		pick, picks := takenFirst(taken)
		z, err := startZooKeeper(ctx, t.TempDir(), pick)
		if err != nil {
			t.Fatal(err)
		}
		defer z.Stop()
		if *picks != 2 {
			t.Fatalf("%d picks, want 2", *picks)
		}
		if ans, err := z.command("srvr"); err != nil || !strings.Contains(ans, "Mode: standalone") {
			t.Fatalf("srvr on %s: %q, %v", z.Addr, ans, err)
		}
		setAsideSays(t, filepath.Join(z.Dir, "zookeeper.log"))
	})
	t.Run("cluster", func(t *testing.T) {
		taken := holdPort(t)
		picks := 0
		// ZooKeeper's pick comes first; the nodes' first pick is the second.
		pick := func(n int) ([]int, error) {
			picks++
			ports, err := FreePorts(n)
			if err == nil && picks == 2 {
				ports[0] = taken
			}
			return ports, err
		}
		c, err := startCluster(ctx, t.TempDir(), "ports", 1, 1, pick)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Stop()
		if picks != 3 {
			t.Fatalf("%d picks, want 3 (ZooKeeper, the taken nodes' ports, new ones)", picks)
		}
		conn, err := Open(c.Addrs()[0], "default")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.clusters WHERE cluster = 'ports'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("system.clusters: %d rows of cluster ports, %v; want 1", n, err)
		}
		setAsideSays(t, c.Nodes[0][0].errorLog())
	})
}
