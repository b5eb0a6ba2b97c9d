// Package chtest starts the ClickHouse engines that the tests run on: a
// throwaway ClickHouse server from the Debian package (18.16) on free loopback
// ports, and ClickHouse 26.x in-process through chDB; plus, when
// CLICKHOUSE_ADDR is set, the user's own server. A missing engine fails the
// test binary with a message that says what to install; nothing is skipped.
package chtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/schema"
)

// DB is the query surface shared by clickhouse-go connections and ChDB.
type DB interface {
	Exec(ctx context.Context, query string, args ...any) error
	Select(ctx context.Context, dest any, query string, args ...any) error
}

// Engine is one ClickHouse engine with a fresh database for one test, with
// the schema applied.
type Engine struct {
	Name     string      // e.g. "server-18.16.1", "chdb-26.7.2.1", "external-25.8.1"
	DB       DB          // runs the project's SQL
	Conn     driver.Conn // the clickhouse-go connection; nil for chDB
	Addr     string      // native address of a server engine
	Database string
	chdb     *ChDB
}

type harness struct {
	server   *Server
	chdb     *ChDB
	external string
	tmp      string
}

var (
	h   *harness
	seq atomic.Int64
)

// Main starts the engines, runs the tests and stops the engines. Use it from
// TestMain: os.Exit(chtest.Main(m)).
func Main(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "mcplens-chtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chtest:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	ctx := context.Background()
	srv, err := StartServer(ctx, tmp+"/server")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chtest: ClickHouse server engine unavailable:", err)
		return 1
	}
	defer srv.Stop()
	ch, err := OpenChDB(tmp + "/chdb")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chtest: chDB engine unavailable (set CHDB_LIB_PATH to node_modules/@chdb/lib-linux-x64-gnu/libchdb.so; `make deps` installs it):", err)
		return 1
	}
	h = &harness{server: srv, chdb: ch, external: os.Getenv("CLICKHOUSE_ADDR"), tmp: tmp}
	return m.Run()
}

// Engines returns every engine under test, each with a new database that
// has the schema applied and is dropped when t ends.
func Engines(t testing.TB) []*Engine {
	t.Helper()
	if h == nil {
		t.Fatal("chtest: engines not started; call os.Exit(chtest.Main(m)) from TestMain")
	}
	ctx := context.Background()
	db := fmt.Sprintf("t_%d_%d_%s", os.Getpid(), seq.Add(1), randomHex(3))
	var out []*Engine
	out = append(out, serverEngine(t, ctx, "server-"+h.server.Version, h.server.Addr, db))
	out = append(out, chdbEngine(t, ctx, db))
	if h.external != "" {
		out = append(out, serverEngine(t, ctx, "external", h.external, db))
	}
	return out
}

func serverEngine(t testing.TB, ctx context.Context, name, addr, db string) *Engine {
	t.Helper()
	admin, err := Open(addr, "default")
	if err != nil {
		t.Fatalf("chtest %s: %v", name, err)
	}
	defer admin.Close()
	if name == "external" {
		var v []struct {
			V string `ch:"v"`
		}
		if err := admin.Select(ctx, &v, "SELECT version() AS v"); err != nil {
			t.Fatalf("chtest external %s: %v", addr, err)
		}
		name = "external-" + v[0].V
	}
	if err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatalf("chtest %s: create database: %v", name, err)
	}
	conn, err := Open(addr, db)
	if err != nil {
		t.Fatalf("chtest %s: %v", name, err)
	}
	t.Cleanup(func() {
		conn.Close()
		if a, err := Open(addr, "default"); err == nil {
			_ = a.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db)
			a.Close()
		}
	})
	if _, err := schema.Apply(ctx, conn); err != nil {
		t.Fatalf("chtest %s: %v", name, err)
	}
	return &Engine{Name: name, DB: conn, Conn: conn, Addr: addr, Database: db}
}

func chdbEngine(t testing.TB, ctx context.Context, db string) *Engine {
	t.Helper()
	if err := h.chdb.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatalf("chtest chdb: create database: %v", err)
	}
	c := h.chdb.WithDatabase(db)
	v, err := c.Version()
	if err != nil {
		t.Fatalf("chtest chdb: %v", err)
	}
	t.Cleanup(func() { _ = h.chdb.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db) })
	if _, err := schema.Apply(ctx, c); err != nil {
		t.Fatalf("chtest chdb: %v", err)
	}
	return &Engine{Name: "chdb-" + v, DB: c, Database: db, chdb: c}
}

// Modern reports whether the engine is ClickHouse 19.3 or newer.
func (e *Engine) Modern() bool { return !strings.HasPrefix(e.Name, "server-18.") }

// StopMerges stops the background merges of e's calls table until the
// engine goes: the copies of a re-ingested call stay apart, as between a
// re-ingest and the merge that folds them. Modern ClickHouse still keeps
// only the latest of a key's copies within one insert.
func (e *Engine) StopMerges(t testing.TB) {
	t.Helper()
	if err := e.DB.Exec(context.Background(), "SYSTEM STOP MERGES calls"); err != nil {
		t.Fatalf("%s: stop merges: %v", e.Name, err)
	}
}

// Insert writes calls into the engine's calls table: through pipeline.Writer
// on servers (so tests exercise the real insert path), as JSONEachRow on chDB.
func (e *Engine) Insert(t testing.TB, calls []pipeline.Call) {
	t.Helper()
	if err := e.InsertCalls(context.Background(), calls); err != nil {
		t.Fatalf("%s: %v", e.Name, err)
	}
}

// InsertCalls is Insert for callers without a testing.TB (benchmarks, tools).
func (e *Engine) InsertCalls(ctx context.Context, calls []pipeline.Call) error {
	if e.Conn != nil {
		w := pipeline.NewWriter(e.Conn, pipeline.NewMetrics(prometheus.NewRegistry()))
		for len(calls) > 0 {
			n := min(len(calls), 50000)
			if err := w.WriteCalls(ctx, calls[:n]); err != nil {
				return err
			}
			calls = calls[n:]
		}
		return nil
	}
	cols := pipeline.CallColumns()
	for len(calls) > 0 {
		n := min(len(calls), 20000)
		rows := make([]map[string]any, n)
		for i := range rows {
			vals := calls[i].Values()
			r := make(map[string]any, len(cols))
			for j, c := range cols {
				if tm, ok := vals[j].(time.Time); ok {
					r[c] = tm.UTC().Format("2006-01-02 15:04:05")
				} else {
					r[c] = vals[j]
				}
			}
			rows[i] = r
		}
		if err := e.chdb.InsertJSONEachRow("calls", cols, rows); err != nil {
			return fmt.Errorf("insert %d calls: %w", n, err)
		}
		calls = calls[n:]
	}
	return nil
}
