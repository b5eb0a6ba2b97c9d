package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/api"
	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
)

func TestMain(m *testing.M) { os.Exit(chtest.Main(m)) }

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func newServer(t *testing.T, db chtest.DB) *httptest.Server {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := api.New(db, prometheus.NewRegistry(), log, api.Config{Now: func() time.Time { return now }})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, srv *httptest.Server, path string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET %s: decode: %v", path, err)
	}
	return resp.StatusCode, body
}

func fixtureCall(tool, category string, failure bool, code int64, at time.Duration, req string) pipeline.Call {
	ts := now.Add(-time.Hour).Add(at)
	c := pipeline.Call{Time: ts, TimeMs: ts.UnixMilli(), Tenant: "acme", Server: "kb", Tool: tool,
		SessionID: "s1", SessionKey: "s1", RequestID: req, CallID: uint64(ts.UnixMilli()), ArgsJSON: "{}",
		ArgKeys: []string{}, ArgValues: []string{}, HasResponse: 1, IsError: -1, Category: category,
		RPCCode: code, ContentBlocks: 1, DeclaredRetryable: -1, IngestedMs: 1}
	if failure {
		c.IsFailure, c.IsError = 1, 1
	}
	return c
}

func TestFailureRatesEndpoint(t *testing.T) {
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, []pipeline.Call{
				fixtureCall("search_docs", "OK", false, 0, 0, "1"),
				fixtureCall("search_docs", "INVALID_ARGUMENT", true, -32602, time.Minute, "2"),
				fixtureCall("search_docs", "OK", false, 0, 2*time.Minute, "3"),
				fixtureCall("search_docs", "RATE_LIMITED", true, 0, 3*time.Minute, "4"),
			})
			srv := newServer(t, e.DB)
			status, body := get(t, srv, "/api/v1/failure-rates?tenant=acme")
			if status != http.StatusOK {
				t.Fatalf("status %d: %v", status, body)
			}
			if body["from"] != "2026-11-28T12:00:00Z" || body["to"] != "2026-11-29T12:00:00Z" {
				t.Errorf("default range: from %v to %v", body["from"], body["to"])
			}
			got, _ := json.Marshal(body["rows"])
			want := `[{"calls":4,"category":"INVALID_ARGUMENT","code":-32602,"failures":1,"rate":0.25,"tool":"search_docs"},{"calls":4,"category":"RATE_LIMITED","code":0,"failures":1,"rate":0.25,"tool":"search_docs"}]`
			if string(got) != want {
				t.Errorf("rows\n got %s\nwant %s", got, want)
			}
			status, body = get(t, srv, "/api/v1/failure-rates?from=2026-11-29T10:00:00Z&to=2026-11-29T12:00:00Z&step=1h&tool=search_docs")
			if status != http.StatusOK {
				t.Fatalf("status %d: %v", status, body)
			}
			rows := body["rows"].([]any)
			if len(rows) != 2 || rows[0].(map[string]any)["time"] != "2026-11-29T11:00:00Z" {
				t.Errorf("stepped rows: %v", rows)
			}
			status, body = get(t, srv, "/api/v1/failure-rates?tenant=nobody")
			if status != http.StatusOK || len(body["rows"].([]any)) != 0 {
				t.Errorf("unknown tenant: %d %v, want 200 and no rows", status, body)
			}
		})
	}
}

func TestBadParametersAre400(t *testing.T) {
	e := chtest.Engines(t)[0]
	srv := newServer(t, e.DB)
	for _, tc := range []struct{ query, wantErr string }{
		{"from=yesterday", `from: want RFC 3339`},
		{"to=2026-11-29T10:00:00Z&from=2026-11-29T11:00:00Z", "must be before"},
		{"tol=search_docs", `unknown parameter "tol"`},
		{"step=10ms", "step: 10ms is outside"},
		{"step=fast", "step: want a duration"},
		{"from=2026-01-01T00:00:00Z&step=1m", "more than 10000 buckets"},
		{"tool=" + strings.Repeat("x", 300), "tool: longer than 256 bytes"},
		{"tool=a&tool=b", `parameter "tool" given 2 times`},
		{"from=-5", "unix seconds out of range"},
		{"tenant=%ff", "tenant: not valid UTF-8"},
	} {
		status, body := get(t, srv, "/api/v1/failure-rates?"+tc.query)
		if status != http.StatusBadRequest || !strings.Contains(body["error"].(string), tc.wantErr) {
			t.Errorf("%s: got %d %v, want 400 containing %q", tc.query, status, body, tc.wantErr)
		}
	}
}

func TestHostileFilterValuesAreBound(t *testing.T) {
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, []pipeline.Call{fixtureCall("search_docs", "INTERNAL", true, 0, 0, "1")})
			srv := newServer(t, e.DB)
			for _, v := range []string{"' OR 1=1 --", `\' OR 1=1`, "x'); DROP TABLE calls; --", "@tenant"} {
				status, body := get(t, srv, "/api/v1/failure-rates?tool="+urlQuery(v))
				if status != http.StatusOK || len(body["rows"].([]any)) != 0 {
					t.Errorf("tool=%q: %d %v, want 200 with no rows", v, status, body)
				}
			}
			status, body := get(t, srv, "/api/v1/failure-rates?tool=search_docs")
			if status != http.StatusOK || len(body["rows"].([]any)) != 1 {
				t.Errorf("calls table damaged: %d %v", status, body)
			}
		})
	}
}

func TestReadiness(t *testing.T) {
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			srv := newServer(t, e.DB)
			if status, body := get(t, srv, "/readyz"); status != http.StatusOK {
				t.Fatalf("migrated database: %d %v", status, body)
			}
			if status, _ := get(t, srv, "/healthz"); status != http.StatusOK {
				t.Fatalf("healthz: %d", status)
			}
			if err := e.DB.Exec(context.Background(), "TRUNCATE TABLE schema_migrations"); err != nil {
				t.Fatal(err)
			}
			status, body := get(t, srv, "/readyz")
			if status != http.StatusServiceUnavailable || !strings.Contains(body["error"].(string), "not applied") {
				t.Errorf("unmigrated database: %d %v, want 503 naming the migration", status, body)
			}
		})
	}
}

func urlQuery(s string) string {
	return strings.NewReplacer("%", "%25", "&", "%26", "#", "%23", " ", "%20", "'", "%27", ";", "%3B", "+", "%2B").Replace(s)
}

// TestQueryMemoryLimitIs503 pins what happens past -query-max-memory on a
// ClickHouse server: the query fails there, and the client gets a 503 that
// says how to narrow the request, not a 500.
func TestQueryMemoryLimitIs503(t *testing.T) {
	e := chtest.Engines(t)[0] // the server engine: chDB ignores per-query settings
	if e.Conn == nil {
		t.Fatalf("first engine %s is not a server", e.Name)
	}
	var fx []pipeline.Call
	for i := 0; i < 2000; i++ {
		fx = append(fx, fixtureCall(fmt.Sprintf("tool_%d", i), "INTERNAL", true, 0, time.Duration(i)*time.Millisecond, fmt.Sprint(i)))
	}
	e.Insert(t, fx)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(api.New(e.DB, prometheus.NewRegistry(), log, api.Config{Now: func() time.Time { return now }, MaxQueryMemory: 1}))
	t.Cleanup(srv.Close)
	status, body := get(t, srv, "/api/v1/failure-rates")
	if status != http.StatusServiceUnavailable || !strings.Contains(fmt.Sprint(body["error"]), "-query-max-memory") {
		t.Errorf("over the memory limit: %d %v, want 503 naming -query-max-memory", status, body)
	}
	srv2 := newServer(t, e.DB) // no limit: the same request answers
	if status, body := get(t, srv2, "/api/v1/failure-rates"); status != http.StatusOK {
		t.Errorf("without the limit: %d %v", status, body)
	}
}
