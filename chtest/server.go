package chtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Server is a throwaway clickhouse-server process: loopback ports chosen at
// start, data in a temporary directory, stopped by Stop.
type Server struct {
	Addr    string // host:port of the native protocol
	Dir     string
	bin     string
	cmd     *exec.Cmd
	exited  chan error
	Version string
	// ddl marks a cluster node: it is ready only once its distributed DDL
	// worker has reached ZooKeeper (waitDDLWorker).
	ddl bool
	// life serialises Stop and Restart: a test's and a cluster's DDL
	// watchdog's (Cluster.WatchDDLWorkers).
	life sync.Mutex
}

const serverConfig = `<yandex>
  <logger><level>warning</level><log>{{dir}}/log/server.log</log><errorlog>{{dir}}/log/error.log</errorlog><console>0</console></logger>
  <http_port>{{http}}</http_port>
  <tcp_port>{{tcp}}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>{{dir}}/data/</path>
  <tmp_path>{{dir}}/tmp/</tmp_path>
  <user_files_path>{{dir}}/user_files/</user_files_path>
  <format_schema_path>{{dir}}/format_schemas/</format_schema_path>
  <users_config>{{users}}</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>5368709</mark_cache_size>
  <max_concurrent_queries>200</max_concurrent_queries>
</yandex>
`

const usersConfig = `<yandex>
  <profiles><default><max_memory_usage>4000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
`

// StartServer starts clickhouse-server from PATH (or the CLICKHOUSE_SERVER_BIN
// file) in dir. It fails with a message naming the package to install when
// the binary is missing, and checks that the server answering on the chosen
// port is the one it started (another ClickHouse may hold a default port).
// A server that exits because another process took its port first is
// started again on new ports, up to portAttempts times.
func StartServer(ctx context.Context, dir string) (*Server, error) {
	return startServer(ctx, dir, FreePorts)
}

func startServer(ctx context.Context, dir string, pick portPicker) (*Server, error) {
	bin, err := serverBin()
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"log", "data", "tmp", "user_files", "format_schemas"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("make server dir: %w", err)
		}
	}
	users := filepath.Join(dir, "users.xml")
	if err := os.WriteFile(users, []byte(usersConfig), 0o644); err != nil {
		return nil, fmt.Errorf("write users.xml: %w", err)
	}
	for attempt := 1; ; attempt++ {
		ports, err := pick(2)
		if err != nil {
			return nil, err
		}
		cfg := strings.NewReplacer("{{dir}}", dir, "{{http}}", strconv.Itoa(ports[1]),
			"{{tcp}}", strconv.Itoa(ports[0]), "{{users}}", users).Replace(serverConfig)
		if err := os.WriteFile(filepath.Join(dir, "config.xml"), []byte(cfg), 0o644); err != nil {
			return nil, fmt.Errorf("write config.xml: %w", err)
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), Dir: dir, bin: bin}
		err = s.launch(ctx)
		if err == nil {
			return s, nil
		}
		if attempt == portAttempts || !portTaken(s.errorLog()) {
			return nil, err
		}
		setAside(s.errorLog(), attempt)
	}
}

// errorLog is the path of the server's error log.
func (s *Server) errorLog() string { return filepath.Join(s.Dir, "log", "error.log") }

// launch starts the server process from the configuration in s.Dir and
// waits until it answers.
func (s *Server) launch(ctx context.Context) error {
	out, err := os.OpenFile(filepath.Join(s.Dir, "log", "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("create server log: %w", err)
	}
	cmd := exec.Command(s.bin, "--config-file="+filepath.Join(s.Dir, "config.xml"))
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	exited := make(chan error, 1)
	s.cmd, s.exited = cmd, exited
	go func() { exited <- cmd.Wait(); out.Close() }()
	if err := s.waitReady(ctx); err != nil {
		s.stop()
		return err
	}
	if s.ddl {
		if err := s.waitDDLWorker(ctx); err != nil {
			s.stop()
			return err
		}
	}
	return nil
}

// Restart starts a server that Stop killed again, on the same data
// directory and ports: a ClickHouse crash and recovery, for fault-injection
// tests. Clients reconnect to the same Addr.
func (s *Server) Restart(ctx context.Context) error {
	s.life.Lock()
	defer s.life.Unlock()
	if done, _ := s.exitErr(); !done {
		return fmt.Errorf("clickhouse-server in %s is still running; Stop it first", s.Dir)
	}
	return s.launch(ctx)
}

// waitReady polls until the server answers, then proves it is ours: a marker
// database created through the connection must appear in our data directory.
func (s *Server) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		if done, err := s.exitErr(); done {
			return fmt.Errorf("clickhouse-server exited during start (%v); see %s", err, filepath.Join(s.Dir, "log"))
		}
		conn, err := Open(s.Addr, "default")
		if err == nil {
			pingCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err = conn.Ping(pingCtx)
			cancel()
			if err == nil {
				defer conn.Close()
				return s.checkOwnership(ctx, conn)
			}
			conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("clickhouse-server on %s not ready after 60s: %v; see %s", s.Addr, err, filepath.Join(s.Dir, "log"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitDDLWorker polls until the server's distributed DDL worker holds a
// ZooKeeper watch. ClickHouse 18.16 starts that worker on its own thread
// and answers queries before the thread has its ZooKeeper session; an
// ON CLUSTER statement sent in between dereferences the missing session
// and the server dies of a segmentation fault (DDLWorker::enqueueQuery,
// seen in CI and reproduced in about one start in three here). The worker
// sets the session, then watches its queue: on a node that starts fresh,
// the first ZooKeeper watch is the worker's. A node restarted with
// replicated tables may watch for them first; its tables opened the
// server's ZooKeeper session before the worker started, so the worker
// takes that session at once and the window is far narrower there.
func (s *Server) waitDDLWorker(ctx context.Context) error {
	conn, err := Open(s.Addr, "default")
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var watches int64
		err := conn.QueryRow(ctx, "SELECT toInt64(value) FROM system.metrics WHERE metric = 'ZooKeeperWatch'").Scan(&watches)
		if err == nil && watches > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("clickhouse-server on %s: its distributed DDL worker holds no ZooKeeper watch after 60s (%v); see %s", s.Addr, err, filepath.Join(s.Dir, "log"))
		}
		select {
		case err := <-s.exited:
			s.exited <- err
			return fmt.Errorf("clickhouse-server exited during start (%v); see %s", err, filepath.Join(s.Dir, "log"))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *Server) checkOwnership(ctx context.Context, conn driver.Conn) error {
	marker := "chtest_marker_" + randomHex(6)
	if err := conn.Exec(ctx, "CREATE DATABASE "+marker); err != nil {
		return fmt.Errorf("create marker database: %w", err)
	}
	defer conn.Exec(ctx, "DROP DATABASE IF EXISTS "+marker) //nolint:errcheck // best effort
	if _, err := os.Stat(filepath.Join(s.Dir, "data", "metadata", marker)); err != nil {
		if _, err2 := os.Stat(filepath.Join(s.Dir, "data", "metadata", marker+".sql")); err2 != nil {
			return fmt.Errorf("the ClickHouse answering on %s is not the server started in %s (marker database not in its data dir)", s.Addr, s.Dir)
		}
	}
	var v []struct {
		V string `ch:"v"`
	}
	if err := conn.Select(ctx, &v, "SELECT version() AS v"); err != nil {
		return fmt.Errorf("server version: %w", err)
	}
	if len(v) == 1 {
		s.Version = v[0].V
	}
	return nil
}

// Stop kills the server process group and waits for it.
func (s *Server) Stop() {
	if s == nil {
		return
	}
	s.life.Lock()
	defer s.life.Unlock()
	s.stop()
}

// restartRunning stops and starts the server again if it is running, and
// reports whether it was; a server that a test stopped stays stopped.
func (s *Server) restartRunning(ctx context.Context) (bool, error) {
	s.life.Lock()
	defer s.life.Unlock()
	if done, _ := s.exitErr(); done {
		return false, nil
	}
	s.stop()
	return true, s.launch(ctx)
}

// exitErr reports, without waiting, whether the server process has exited
// and how; the exit stays there for the next caller.
func (s *Server) exitErr() (bool, error) {
	select {
	case err := <-s.exited:
		s.exited <- err
		return true, err
	default:
		return false, nil
	}
}

// stop is Stop with life held (or the server not yet shared).
func (s *Server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case err := <-s.exited:
		s.exited <- err // a second Stop, or Restart, sees it too
	case <-time.After(10 * time.Second):
	}
}

// Open connects to a ClickHouse server over the native protocol.
func Open(addr, database string) (driver.Conn, error) {
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{addr},
		Auth:        clickhouse.Auth{Database: database, Username: "default"},
		DialTimeout: 5 * time.Second,
		ReadTimeout: 120 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("open clickhouse %s: %w", addr, err)
	}
	return conn, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
