package chtest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// portAttempts is how many times a server whose port was taken before it
// bound it is started again on new ports.
const portAttempts = 5

// portPicker returns n distinct loopback ports that were free a moment ago.
// The harness takes it as a parameter so that a test can hand a server a
// port that is already taken.
type portPicker func(n int) ([]int, error)

// FreePorts picks n distinct loopback ports that were free a moment ago,
// outside the kernel's ephemeral range when the machine leaves room below
// it (ports 10000 up to the range's start). A port the kernel picks for
// port 0 comes from that range, which is also where every outgoing
// connection takes its local port; on a busy machine a client took a
// server's port between the pick and the server's bind, and the server
// exited (seen in CI: clickhouse-server exit status 70, "Address already
// in use"). Outside the range only another process that picks the same
// port can take it in that window; the harness's servers detect that
// (portTaken) and start again on new ports. Tests that start servers of
// their own (the mcplens binaries, Prometheus) pick their ports here too.
func FreePorts(n int) ([]int, error) {
	lo, hi := 10000, ephemeralStart()
	if hi-lo < 1000 {
		return kernelPorts(n)
	}
	ports := make([]int, 0, n)
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries == 100*n {
			return nil, fmt.Errorf("pick %d free ports in %d-%d: %d tries", n, lo, hi-1, tries)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(lo+rand.IntN(hi-lo))))
		if err != nil {
			continue // taken, or held by this pick already
		}
		held = append(held, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// kernelPorts lets the kernel pick n ports (port 0), for machines whose
// ephemeral range leaves no room below it.
func kernelPorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ephemeralStart returns the first port of the kernel's ephemeral range
// (Linux's default, 32768, when the file cannot be read).
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	p, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return p
}

// portTaken reports whether the log at path says its process could not
// bind a port: "Address already in use" in ClickHouse's error.log and in
// ZooKeeper's log (java.net.BindException).
func portTaken(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && bytes.Contains(bytes.ToLower(b), []byte("address already in use"))
}

// setAside renames the log at path out of the way of the next start, so
// that its port-taken message stays for a reader and is not read as the
// next attempt's.
func setAside(path string, attempt int) {
	_ = os.Rename(path, fmt.Sprintf("%s.attempt%d", path, attempt))
}
