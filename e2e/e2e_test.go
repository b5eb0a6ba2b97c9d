// Package e2e runs the built binaries against a real ClickHouse server: ingest
// and api as processes, NDJSON posted over HTTP, numbers read back from the API.
package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcplens/mcplens/binproc"
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
type proc = binproc.Proc

func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return binproc.Start(t, name, 30*time.Second, func(addr string) []string {
		argv := append([]string{filepath.Join(bin, name), "-listen", addr}, args...)
		if name == "ingest" {
			// Each ingest gets its own spool unless args name one (the last
			// flag wins), and no retention job: the fixtures have fixed dates.
			argv = append([]string{argv[0], "serve", "-spool-dir", t.TempDir(), "-retention-every", "0"}, argv[1:]...)
		}
		return argv
	})
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

	status, res := post(t, ingest.Addr, body, true)
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
	waitRows(t, api.Addr, "/api/v1/failure-rates?"+window, wantRates)
	waitRows(t, api.Addr, "/api/v1/empty-results?arg_key=department&"+window,
		`[{"arg_key":"department","arg_value":"finace","calls":1,"empty":1,"rate":1,"tool":"search_docs"},`+
			`{"arg_key":"department","arg_value":"finance","calls":1,"empty":0,"rate":0,"tool":"search_docs"}]`)

	// The same body again: every analytic counts each call once.
	if status, _ := post(t, ingest.Addr, body, false); status != http.StatusOK {
		t.Fatalf("second POST: %d", status)
	}
	time.Sleep(500 * time.Millisecond)
	waitRows(t, api.Addr, "/api/v1/failure-rates?"+window, wantRates)
	// From the empty-results row to its call, listed once though ingested
	// twice, with what classified it.
	finace := apiRows(t, api.Addr, "/api/v1/calls?arg_key=department&arg_value=finace&"+window)
	if len(finace) != 1 {
		t.Fatalf("the calls with department=finace: %v, want the one call", finace)
	}
	got := fmt.Sprint(finace[0]["time"], " ", finace[0]["tool"], " ", finace[0]["category"], " ", finace[0]["failed"], " ",
		finace[0]["is_error"], " ", finace[0]["message"], " ", compact(t, finace[0]["args"]), " ", finace[0]["client"])
	if want := `2026-11-29T10:00:00.1Z search_docs EMPTY_RESULT false 0 未找到匹配文档 {"department":"finace","q":"差旅报销上限"} claude-desktop`; got != want {
		t.Errorf("the call with department=finace:\n got %s\nwant %s", got, want)
	}

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
	if status, res := post(t, stop.Addr, late, false); status != http.StatusOK || res["accepted"] != 1.0 {
		t.Fatalf("late POST: %d %v", status, res)
	}
	if err := stop.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := stop.Cmd.Wait(); err != nil {
		t.Fatalf("ingest exit after SIGTERM: %v\n%s", err, stop.Log)
	}
	waitRows(t, api.Addr, "/api/v1/failure-rates?tool=lookup_customer&"+window,
		`[{"calls":2,"category":"UNAUTHENTICATED","code":0,"failures":2,"rate":1,"tool":"lookup_customer"}]`)
}
