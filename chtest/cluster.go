package chtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Cluster is a throwaway ClickHouse cluster on loopback: shards × replicas
// clickhouse-server processes coordinated by one ZooKeeper, each with the
// cluster in <remote_servers> (internal_replication on), its {shard} and
// {replica} macros, a distributed DDL queue for ON CLUSTER statements and
// its own interserver port for replication. Stop kills every process.
type Cluster struct {
	Name  string      // the cluster's name in <remote_servers>
	ZK    *ZooKeeper  // coordinates replication and ON CLUSTER DDL
	Nodes [][]*Server // Nodes[shard][replica], 0-based
}

// clusterServerConfig is added to serverConfig for a cluster node. The
// DDL worker that runs ON CLUSTER statements uses the default profile, not
// the settings sent with the statement, so on ClickHouse 18.16 the profile
// must allow LowCardinality (clusterUsersConfig) and the servers must start
// with it: the worker reads the profile once.
const clusterServerConfig = `  <interserver_http_host>127.0.0.1</interserver_http_host>
  <interserver_http_port>{{interserver}}</interserver_http_port>
  <zookeeper><node><host>{{zkhost}}</host><port>{{zkport}}</port></node><session_timeout_ms>6000</session_timeout_ms></zookeeper>
  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
  <macros><shard>{{shard}}</shard><replica>{{replica}}</replica></macros>
  <remote_servers><{{cluster}}>
{{shards}}  </{{cluster}}></remote_servers>
</yandex>
`

const clusterUsersConfig = `<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage><allow_experimental_low_cardinality_type>1</allow_experimental_low_cardinality_type></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
`

// StartCluster starts ZooKeeper and shards × replicas ClickHouse servers in
// dir and returns once every server answers and its distributed DDL worker
// has reached ZooKeeper (Server.waitDDLWorker); Restart waits for both
// too. The users' profile allows LowCardinality in DDL, which ClickHouse
// 18.16 (the Debian server) needs for ON CLUSTER migrations; the harness
// targets that server. A node that exits because another process took one
// of its ports first makes every node start again on new ports, up to
// portAttempts times.
func StartCluster(ctx context.Context, dir, name string, shards, replicas int) (*Cluster, error) {
	return startCluster(ctx, dir, name, shards, replicas, FreePorts)
}

func startCluster(ctx context.Context, dir, name string, shards, replicas int, pick portPicker) (*Cluster, error) {
	if shards < 1 || replicas < 1 {
		return nil, fmt.Errorf("cluster of %d shards × %d replicas", shards, replicas)
	}
	if !identifier(name) {
		return nil, fmt.Errorf("cluster name %q: use letters, digits and _", name)
	}
	bin, err := serverBin()
	if err != nil {
		return nil, err
	}
	zk, err := startZooKeeper(ctx, filepath.Join(dir, "zookeeper"), pick)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Name: name, ZK: zk}
	for attempt := 1; ; attempt++ {
		err := c.startNodes(ctx, dir, bin, shards, replicas, pick)
		if err == nil {
			return c, nil
		}
		var taken []string
		for _, n := range c.servers() {
			if n != nil && portTaken(n.errorLog()) {
				taken = append(taken, n.errorLog())
			}
		}
		c.stopNodes()
		if attempt == portAttempts || len(taken) == 0 {
			c.ZK.Stop()
			return nil, fmt.Errorf("start cluster %s: %w", name, err)
		}
		for _, log := range taken {
			setAside(log, attempt)
		}
	}
}

// startNodes configures shards × replicas servers in dir on ports from
// pick and starts them together; c.Nodes holds them, started or not.
func (c *Cluster) startNodes(ctx context.Context, dir, bin string, shards, replicas int, pick portPicker) error {
	ports, err := pick(3 * shards * replicas)
	if err != nil {
		return err
	}
	port := func(s, r, k int) int { return ports[3*(s*replicas+r)+k] } // k: 0 tcp, 1 http, 2 interserver
	var topology strings.Builder
	for s := range shards {
		topology.WriteString("    <shard><internal_replication>true</internal_replication>")
		for r := range replicas {
			fmt.Fprintf(&topology, "<replica><host>127.0.0.1</host><port>%d</port></replica>", port(s, r, 0))
		}
		topology.WriteString("</shard>\n")
	}
	zkHost, zkPort, _ := net.SplitHostPort(c.ZK.Addr)
	c.Nodes = make([][]*Server, shards)
	for s := range shards {
		c.Nodes[s] = make([]*Server, replicas)
		for r := range replicas {
			nodeDir := filepath.Join(dir, fmt.Sprintf("s%dr%d", s+1, r+1))
			if err := writeNodeConfig(nodeDir, strings.NewReplacer(
				"{{http}}", strconv.Itoa(port(s, r, 1)), "{{tcp}}", strconv.Itoa(port(s, r, 0)),
				"{{interserver}}", strconv.Itoa(port(s, r, 2)), "{{zkhost}}", zkHost, "{{zkport}}", zkPort,
				"{{shard}}", fmt.Sprintf("%02d", s+1), "{{replica}}", fmt.Sprintf("s%dr%d", s+1, r+1),
				"{{cluster}}", c.Name, "{{shards}}", topology.String())); err != nil {
				return err
			}
			c.Nodes[s][r] = &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port(s, r, 0))), Dir: nodeDir, bin: bin, ddl: true}
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, shards*replicas)
	for i, n := range c.servers() {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = n.launch(ctx) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// writeNodeConfig writes config.xml and users.xml of one node, filling the
// single-server template and the cluster additions with rep.
func writeNodeConfig(dir string, rep *strings.Replacer) error {
	for _, d := range []string{"log", "data", "tmp", "user_files", "format_schemas"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("make server dir: %w", err)
		}
	}
	users := filepath.Join(dir, "users.xml")
	if err := os.WriteFile(users, []byte(clusterUsersConfig), 0o644); err != nil {
		return fmt.Errorf("write users.xml: %w", err)
	}
	cfg := strings.Replace(serverConfig, "</yandex>\n", clusterServerConfig, 1)
	cfg = strings.NewReplacer("{{dir}}", dir, "{{users}}", users).Replace(rep.Replace(cfg))
	if err := os.WriteFile(filepath.Join(dir, "config.xml"), []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("write config.xml: %w", err)
	}
	return nil
}

// Addrs returns the native addresses of every node, shard by shard.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, n := range c.servers() {
		out = append(out, n.Addr)
	}
	return out
}

func (c *Cluster) servers() []*Server {
	var out []*Server
	for _, shard := range c.Nodes {
		out = append(out, shard...)
	}
	return out
}

// Stop kills every server, then ZooKeeper.
func (c *Cluster) Stop() {
	if c == nil {
		return
	}
	c.stopNodes()
	c.ZK.Stop()
}

// stopNodes kills every server and waits for them.
func (c *Cluster) stopNodes() {
	var wg sync.WaitGroup
	for _, n := range c.servers() {
		if n != nil {
			wg.Add(1)
			go func() { defer wg.Done(); n.Stop() }()
		}
	}
	wg.Wait()
}

// Pid returns the process id of the running server, 0 when it is not
// running: for tests that read its CPU time or memory from /proc.
func (s *Server) Pid() int {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	if done, _ := s.exitErr(); done {
		return 0
	}
	return s.cmd.Process.Pid
}

// serverBin returns the clickhouse-server binary: CLICKHOUSE_SERVER_BIN, or
// the one on PATH.
func serverBin() (string, error) {
	if bin := os.Getenv("CLICKHOUSE_SERVER_BIN"); bin != "" {
		return bin, nil
	}
	p, err := exec.LookPath("clickhouse-server")
	if err != nil {
		return "", errors.New("clickhouse-server not found on PATH: install it (apt-get install -y clickhouse-server clickhouse-client) or run `make deps`")
	}
	return p, nil
}

func identifier(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, r := range s {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// ddlWorkerStopped is how ClickHouse 18.16 logs that a node's distributed
// DDL worker ended on a ZooKeeper error it does not retry ("Unexpected
// ZooKeeper error: ... Terminating."), as a race of ON CLUSTER ALTERs on
// replicated tables makes it (a Node exists error on the shard's executed
// node). Later servers restart the worker themselves (ClickHouse pull
// request 18285); on 18.16 the node runs no ON CLUSTER statement again
// until the server restarts.
const ddlWorkerStopped = "DDLWorker: Unexpected ZooKeeper error"

// WatchDDLWorkers restarts, until ctx ends, every running node whose error
// log says its DDL worker stopped (ddlWorkerStopped), as an operator of
// 18.16 does, and calls report with what it did: the restarted worker takes
// up the DDL queue again, so that later ON CLUSTER statements do not wait
// for the node in vain. A node that a test stopped is left stopped.
func (c *Cluster) WatchDDLWorkers(ctx context.Context, every time.Duration, report func(string)) {
	offsets := map[*Server]int64{}
	for {
		for _, n := range c.servers() {
			path := filepath.Join(n.Dir, "log", "error.log")
			line, off, err := findFrom(path, offsets[n], ddlWorkerStopped)
			offsets[n] = off
			if err != nil || line == "" {
				continue
			}
			running, err := n.restartRunning(ctx)
			switch {
			case !running:
				report(fmt.Sprintf("%s: its DDL worker stopped (%s); the node is stopped, not restarted", n.Addr, line))
			case err != nil:
				report(fmt.Sprintf("%s: its DDL worker stopped (%s); restart failed: %v", n.Addr, line, err))
			default:
				report(fmt.Sprintf("%s: its DDL worker stopped (%s); restarted the node (ClickHouse 18.16, docs/scaling.md)", n.Addr, line))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// findFrom returns the first line of the file at path, from offset on, that
// contains s, and the offset to look from next time: past that line, or
// past the last whole line read.
func findFrom(path string, offset int64, s string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", offset, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", offset, err
	}
	if st.Size() < offset {
		offset = 0 // the log was cut or rotated
	}
	b := make([]byte, st.Size()-offset)
	if _, err := f.ReadAt(b, offset); err != nil {
		return "", offset, err
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break // a line being written: read it whole next time
		}
		line := b[:i]
		b = b[i+1:]
		offset += int64(i + 1)
		if bytes.Contains(line, []byte(s)) {
			return string(line), offset, nil
		}
	}
	return "", offset, nil
}
