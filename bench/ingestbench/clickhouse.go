package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	clickhousego "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/schema"
)

// clickhouse is the server every run of one benchmark writes to, each run
// into a database of its own.
type clickhouse struct {
	addr    string
	host    string
	port    string
	version string
	pid     int // of clickhouse-server when we started it; 0 for an external server
	admin   driver.Conn
	stop    func()
	seq     atomic.Int64
}

// startClickHouse connects to addr, or when addr is empty starts a
// throwaway ClickHouse server in dir (chtest.StartServer).
func startClickHouse(ctx context.Context, addr, dir string) (*clickhouse, error) {
	ch := &clickhouse{stop: func() {}}
	if addr == "" {
		srv, err := chtest.StartServer(ctx, dir)
		if err != nil {
			return nil, err
		}
		ch.stop = srv.Stop
		addr = srv.Addr
		ch.pid = srv.PID()
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		ch.stop()
		return nil, fmt.Errorf("clickhouse address %q: %w", addr, err)
	}
	ch.addr, ch.host, ch.port = addr, host, port
	if ch.admin, err = chtest.Open(addr, "default"); err != nil {
		ch.stop()
		return nil, err
	}
	var v []struct {
		V string `ch:"v"`
	}
	if err := ch.admin.Select(ctx, &v, "SELECT version() AS v"); err != nil || len(v) != 1 {
		ch.close()
		return nil, fmt.Errorf("clickhouse version: %v", err)
	}
	ch.version = v[0].V
	return ch, nil
}

func (ch *clickhouse) close() {
	ch.admin.Close()
	ch.stop()
}

// newDatabase creates a database with the mcplens schema (the calls table
// and its rollup view, as ingest would create it) and returns its name.
func (ch *clickhouse) newDatabase(ctx context.Context, prefix string) (string, error) {
	db := fmt.Sprintf("bench_%s_%d_%d", prefix, os.Getpid(), ch.seq.Add(1))
	if err := ch.admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		return "", fmt.Errorf("create database %s: %w", db, err)
	}
	conn, err := chtest.Open(ch.addr, db)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := schema.Apply(ctx, conn); err != nil {
		return "", fmt.Errorf("schema in %s: %w", db, err)
	}
	return db, nil
}

// ddl returns ctx with the setting that ClickHouse before 19.3 needs to
// create LowCardinality columns (and newer servers reject).
func (ch *clickhouse) ddl(ctx context.Context) context.Context {
	if strings.HasPrefix(ch.version, "18.") || strings.HasPrefix(ch.version, "19.1.") || strings.HasPrefix(ch.version, "19.2.") {
		return clickhousego.Context(ctx, clickhousego.WithSettings(clickhousego.Settings{"allow_experimental_low_cardinality_type": 1}))
	}
	return ctx
}

// runFile runs the statements of the file at path in database db, in
// order; a ';' at the end of a line ends a statement. A -variants sql=
// entry uses it to change a run's schema (an older view, say) for a
// before/after of the server's side.
func (ch *clickhouse) runFile(ctx context.Context, db, path string) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("sql= variant: %w", err)
	}
	conn, err := chtest.Open(ch.addr, db)
	if err != nil {
		return err
	}
	defer conn.Close()
	n := 0
	for _, stmt := range strings.Split(string(text)+"\n", ";\n") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		n++
		if err := conn.Exec(ch.ddl(ctx), stmt); err != nil {
			return fmt.Errorf("%s, statement %d: %w", path, n, err)
		}
	}
	if n == 0 {
		return fmt.Errorf("sql= variant: %s holds no statement", path)
	}
	return nil
}

func (ch *clickhouse) dropDatabase(ctx context.Context, db string) {
	_ = ch.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+db)
}

// count returns count() FROM db.calls, with FINAL when final is set.
func (ch *clickhouse) count(ctx context.Context, db string, final bool) (uint64, error) {
	q := "SELECT count() AS n FROM " + db + ".calls"
	if final {
		q += " FINAL"
	}
	return ch.countOf(ctx, q)
}

// countValidated returns the rows of db.calls with args_validated 1.
func (ch *clickhouse) countValidated(ctx context.Context, db string) (uint64, error) {
	return ch.countOf(ctx, "SELECT count() AS n FROM "+db+".calls WHERE args_validated = 1")
}

// countOf runs q, a SELECT of one count named n.
func (ch *clickhouse) countOf(ctx context.Context, q string) (uint64, error) {
	var n []struct {
		N uint64 `ch:"n"`
	}
	if err := ch.admin.Select(ctx, &n, q); err != nil {
		return 0, err
	}
	if len(n) != 1 {
		return 0, fmt.Errorf("%s: %d rows", q, len(n))
	}
	return n[0].N, nil
}

// waitViolations waits until db.call_violations holds rows and its count
// has not moved for two seconds (ingest flushes them every second, apart
// from the calls), and returns the count; none within timeout is an error:
// the calls were not validated.
func (ch *clickhouse) waitViolations(ctx context.Context, db string, timeout time.Duration) (uint64, error) {
	deadline := time.Now().Add(timeout)
	var last uint64
	var since time.Time
	for {
		n, err := ch.countOf(ctx, "SELECT count() AS n FROM "+db+".call_violations")
		if err != nil {
			return 0, err
		}
		switch {
		case n != last || since.IsZero():
			last, since = n, time.Now()
		case last > 0 && time.Since(since) >= 2*time.Second:
			return last, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s.call_violations holds %d rows after %s; want the validated calls' rows", db, last, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitCount polls count() FROM db.calls every 20 ms until it reaches want
// and returns when it did. count() without FINAL is cheap at any size; the
// caller checks the FINAL count once at the end.
func (ch *clickhouse) waitCount(ctx context.Context, db string, want uint64, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		n, err := ch.count(ctx, db, false)
		if err != nil {
			return time.Time{}, err
		}
		if n >= want {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%s.calls holds %d of %d calls after %s", db, n, want, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// client runs clickhouse-client with query, stdin from in and stdout to
// out, and returns the process's CPU time.
func (ch *clickhouse) client(ctx context.Context, db, query, in, out string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, "clickhouse-client", "--host", ch.host, "--port", ch.port,
		"--database", db, "--query", query)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if in != "" {
		f, err := os.Open(in)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		cmd.Stdin = f
	}
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		cmd.Stdout = f
	}
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("clickhouse-client %q: %w: %s", query, err, strings.TrimSpace(stderr.String()))
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// callColumns is the column list of the calls table in pipeline.Call order.
func callColumns() string { return strings.Join(pipeline.CallColumns(), ", ") }

// peakRSS returns VmHWM of process pid in bytes, or 0 when it cannot be read.
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
