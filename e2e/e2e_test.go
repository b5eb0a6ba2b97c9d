// Package e2e runs the built binaries against a real ClickHouse server: ingest
// and api as processes, NDJSON posted over HTTP, numbers read back from the API.
package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
)

var (
	bin    string // directory holding the built ingest and api binaries
	server *chtest.Server
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "mcplens-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "bin")
	for _, c := range []string{"ingest", "api"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(bin, c), "../cmd/"+c).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: build %s: %v\n%s", c, err, out)
			return 1
		}
	}
	server, err = chtest.StartServer(context.Background(), filepath.Join(dir, "clickhouse"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: ClickHouse server engine unavailable:", err)
		return 1
	}
	defer server.Stop()
	return m.Run()
}

// proc is a started binary with its log.
type proc struct {
	cmd  *exec.Cmd
	log  *logBuffer
	addr string
}

// logBuffer is a process's stdout and stderr, safe to read while the
// process writes them.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// errPortTaken is a process that could not bind the address freeAddr gave
// it: between freeAddr's close and the bind, the kernel may hand the port
// to another socket (an outgoing connection's local port, on a busy
// machine).
var errPortTaken = errors.New("its listen address was taken before it bound it")

// startHealthy starts the binary of argv, given the listen address addr
// by listen(addr), and waits until it answers /healthz there. A port taken
// before the bind is picked again, up to five times; any other failure to
// become healthy fails t with the process's log. t's cleanup kills the
// process if it still runs, and logs its output if t failed.
func startHealthy(t *testing.T, name string, listen func(addr string) []string) *proc {
	t.Helper()
	for attempt := 1; ; attempt++ {
		addr := freeAddr(t)
		argv := listen(addr)
		p := &proc{log: &logBuffer{}, addr: addr}
		p.cmd = exec.Command(argv[0], argv[1:]...)
		p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		err := p.healthy(30 * time.Second)
		if err == nil {
			t.Cleanup(func() {
				if p.cmd.ProcessState == nil {
					_ = p.cmd.Process.Kill()
					_ = p.cmd.Wait()
				}
				if t.Failed() {
					t.Logf("%s log:\n%s", name, tail(p.log.String(), 6000))
				}
			})
			return p
		}
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if errors.Is(err, errPortTaken) && attempt < 5 {
			t.Logf("%s on %s: %v; starting it again on another port", name, addr, err)
			continue
		}
		t.Fatalf("%s did not become healthy on %s: %v\n%s", name, addr, err, p.log)
	}
}

// healthy polls p's /healthz until it answers 200, the process reports
// that its address is taken (errPortTaken), or timeout passes.
func (p *proc) healthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get("http://" + p.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/healthz: %s", resp.Status)
		}
		if strings.Contains(p.log.String(), "address already in use") {
			return errPortTaken
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return startHealthy(t, name, func(addr string) []string {
		argv := append([]string{filepath.Join(bin, name), "-listen", addr}, args...)
		if name == "ingest" {
			// Each ingest gets its own spool unless args name one (the last
			// flag wins), and no retention job: the fixtures have fixed dates.
			argv = append([]string{argv[0], "serve", "-spool-dir", t.TempDir(), "-retention-every", "0"}, argv[1:]...)
		}
		return argv
	})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func post(t *testing.T, addr string, body []byte, gz bool) (int, map[string]any) {
	t.Helper()
	var r io.Reader = bytes.NewReader(body)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/calls", nil)
	if gz {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(body)
		w.Close()
		r = &b
		req.Header.Set("Content-Encoding", "gzip")
	}
	req.Body = io.NopCloser(r)
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

func apiRows(t *testing.T, addr, path string) []map[string]any {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Rows  []map[string]any `json:"rows"`
		Error string           `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, out.Error)
	}
	return out.Rows
}

func compact(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitRows polls the API until it returns want, or fails after a deadline.
func waitRows(t *testing.T, addr, path, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var got string
	for time.Now().Before(deadline) {
		if got = compact(t, apiRows(t, addr, path)); got == want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("GET %s\n got %s\nwant %s", path, got, want)
}

const window = "from=2026-11-29T10:00:00Z&to=2026-11-29T11:00:00Z"

func TestCapturePathEndToEnd(t *testing.T) {
	db := "e2e_" + strings.ReplaceAll(t.Name(), "/", "_")
	ch := []string{"-clickhouse-addr", server.Addr, "-clickhouse-database", db}
	ingest := start(t, "ingest", append(ch, "-flush-every", "100ms")...)
	api := start(t, "api", ch...)
	body, err := os.ReadFile("testdata/calls.ndjson")
	if err != nil {
		t.Fatal(err)
	}

	status, res := post(t, ingest.addr, body, true)
	wantRes := `{"accepted":8,"errors":[{"line":10,"reason":"` // the reason text is the decoder's; checked below
	if status != http.StatusOK || !strings.HasPrefix(compact(t, res), wantRes) {
		t.Fatalf("POST: %d %s", status, compact(t, res))
	}
	if res["skipped"] != 1.0 || res["rejected"] != 2.0 {
		t.Errorf("POST: skipped %v rejected %v, want 1 and 2", res["skipped"], res["rejected"])
	}
	errs := res["errors"].([]any)
	if len(errs) != 2 || errs[1].(map[string]any)["line"] != 11.0 || !strings.Contains(fmt.Sprint(errs[1]), "time") {
		t.Errorf("POST errors: %v, want line 10 (truncated JSON) and line 11 (missing time)", errs)
	}

	wantRates := `[{"calls":2,"category":"INVALID_ARGUMENT","code":-32602,"failures":1,"rate":0.5,"tool":"get_forecast"},` +
		`{"calls":1,"category":"UNAUTHENTICATED","code":0,"failures":1,"rate":1,"tool":"lookup_customer"},` +
		`{"calls":5,"category":"UNAVAILABLE","code":0,"failures":3,"rate":0.6,"tool":"search_docs"}]`
	waitRows(t, api.addr, "/api/v1/failure-rates?"+window, wantRates)
	waitRows(t, api.addr, "/api/v1/empty-results?arg_key=department&"+window,
		`[{"arg_key":"department","arg_value":"finace","calls":1,"empty":1,"rate":1,"tool":"search_docs"},`+
			`{"arg_key":"department","arg_value":"finance","calls":1,"empty":0,"rate":0,"tool":"search_docs"}]`)

	// The same body again: every analytic counts each call once.
	if status, _ := post(t, ingest.addr, body, false); status != http.StatusOK {
		t.Fatalf("second POST: %d", status)
	}
	time.Sleep(500 * time.Millisecond)
	waitRows(t, api.addr, "/api/v1/failure-rates?"+window, wantRates)

	// Rejected lines are kept with their reason.
	conn, err := chtest.Open(server.Addr, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var dl []struct {
		Line   uint32 `ch:"line"`
		Reason string `ch:"reason"`
	}
	if err := conn.Select(context.Background(), &dl, "SELECT line, reason FROM dead_letters ORDER BY received_ms, line LIMIT 2"); err != nil {
		t.Fatal(err)
	}
	if len(dl) != 2 || dl[0].Line != 10 || dl[1].Line != 11 {
		t.Errorf("dead letters: %+v", dl)
	}

	// SIGTERM flushes what is queued before exiting.
	late := []byte(strings.ReplaceAll(strings.Split(string(body), "\n")[7], `"id":3`, `"id":33`))
	late = []byte(strings.ReplaceAll(string(late), "10:03:00.000Z", "10:30:00.000Z"))
	stop := start(t, "ingest", append(ch, "-flush-every", "1h")...)
	if status, res := post(t, stop.addr, late, false); status != http.StatusOK || res["accepted"] != 1.0 {
		t.Fatalf("late POST: %d %v", status, res)
	}
	if err := stop.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := stop.cmd.Wait(); err != nil {
		t.Fatalf("ingest exit after SIGTERM: %v\n%s", err, stop.log)
	}
	waitRows(t, api.addr, "/api/v1/failure-rates?tool=lookup_customer&"+window,
		`[{"calls":2,"category":"UNAUTHENTICATED","code":0,"failures":2,"rate":1,"tool":"lookup_customer"}]`)
}

// TestStartHealthyPicksAnotherPort: a binary whose listen address another
// socket holds exits with "address already in use"; startHealthy starts it
// again on another port instead of waiting for it until its timeout.
func TestStartHealthyPicksAnotherPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var tried []string
	start := time.Now()
	p := startHealthy(t, "api", func(addr string) []string {
		if len(tried) == 0 {
			addr = taken.Addr().String()
		}
		tried = append(tried, addr)
		return []string{filepath.Join(bin, "api"), "-listen", addr, "-clickhouse-addr", server.Addr, "-clickhouse-database", "default"}
	})
	if len(tried) != 2 || tried[1] != p.addr || time.Since(start) > 20*time.Second {
		t.Fatalf("started on %v in %s, healthy on %s; want the taken address, then another one, well before the 30 s timeout", tried, time.Since(start).Round(time.Millisecond), p.addr)
	}
}
