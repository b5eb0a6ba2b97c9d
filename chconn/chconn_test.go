package chconn_test

import (
	"context"
	"flag"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcplens/mcplens/chconn"
	"github.com/mcplens/mcplens/chtest"
)

func TestCompressionFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want string // Compression after parsing; "" means Validate fails
	}{
		{nil, "", "none"},
		{[]string{"-clickhouse-compression", "lz4"}, "", "lz4"},
		{nil, "zstd", "zstd"},
		{[]string{"-clickhouse-compression", "none"}, "lz4", "none"},
		{[]string{"-clickhouse-compression", "gzip"}, "", ""},
		{[]string{"-clickhouse-compression", "LZ4"}, "", ""},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		var c chconn.Config
		c.RegisterFlags(fs, func(k string) string {
			if k == "CLICKHOUSE_COMPRESSION" {
				return tc.env
			}
			return ""
		})
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := c.Validate()
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%v: Validate accepted %q", tc.args, c.Compression)
		case tc.want == "" && !strings.Contains(err.Error(), "-clickhouse-compression"):
			t.Errorf("%v: error %q does not name the flag", tc.args, err)
		case tc.want != "" && (err != nil || c.Compression != tc.want):
			t.Errorf("%v env %q: compression %q, err %v; want %q", tc.args, tc.env, c.Compression, err, tc.want)
		}
	}
}

// countingWriter counts the bytes written through it as they go.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// countingProxy forwards TCP connections to addr and counts the bytes sent
// towards it.
func countingProxy(t *testing.T, addr string) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	sent := new(atomic.Int64)
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", addr)
			if err != nil {
				in.Close()
				continue
			}
			go func() { io.Copy(in, out); in.Close() }()
			go func() { io.Copy(countingWriter{out, sent}, in); out.Close() }()
		}
	}()
	return ln.Addr().String(), sent
}

// TestCompressedRoundTrip inserts and reads back rows over each
// compression on the ClickHouse 18.16 server, through a proxy that counts
// the bytes: a frame the server could not read would fail the INSERT or the
// SELECT, and lz4 and zstd must send far fewer bytes than none.
func TestCompressedRoundTrip(t *testing.T) {
	ctx := context.Background()
	srv, err := chtest.StartServer(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	sentBy := map[string]int64{}
	for _, method := range []string{"none", "lz4", "zstd", ""} {
		t.Run("compression="+method, func(t *testing.T) {
			db := "c_" + method
			if method == "" {
				db = "c_default"
			}
			addr, sent := countingProxy(t, srv.Addr)
			conn, err := chconn.Open(ctx, chconn.Config{Addr: addr, Database: db, User: "default", Compression: method}, true)
			if err != nil {
				t.Fatal(err)
			}
			if err := conn.Exec(ctx, "CREATE TABLE t (n UInt64, s String) ENGINE = MergeTree ORDER BY n"); err != nil {
				t.Fatal(err)
			}
			batch, err := conn.PrepareBatch(ctx, "INSERT INTO t (n, s)")
			if err != nil {
				t.Fatal(err)
			}
			const rows = 20000
			var want uint64
			for i := range uint64(rows) {
				s := strings.Repeat("no matching documents ", int(i%7))
				want += i + uint64(len(s))
				if err := batch.Append(i, s); err != nil {
					t.Fatal(err)
				}
			}
			if err := batch.Send(); err != nil {
				t.Fatal(err)
			}
			var got []struct {
				N   uint64 `ch:"rows"`
				Sum uint64 `ch:"total"`
			}
			if err := conn.Select(ctx, &got, "SELECT count() AS rows, sum(n + length(s)) AS total FROM t"); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].N != rows || got[0].Sum != want {
				t.Fatalf("read back %+v, want %d rows summing to %d", got, rows, want)
			}
			sentBy[method] = sent.Load() // the INSERT's blocks were sent before Send returned
			conn.Close()
		})
	}
	// The rows hold about 1.4 MB of text, highly repetitive.
	if none := sentBy["none"]; none < 1<<20 || sentBy[""] < 1<<20 {
		t.Fatalf("sent %d bytes uncompressed (%d by default), want over 1 MiB", none, sentBy[""])
	}
	for _, m := range []string{"lz4", "zstd"} {
		if sentBy[m]*4 > sentBy["none"] {
			t.Errorf("%s sent %d bytes, none %d: want under a quarter", m, sentBy[m], sentBy["none"])
		}
	}
	t.Logf("bytes sent: %v", sentBy)
}
