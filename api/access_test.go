package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/api"
	"github.com/mcplens/mcplens/auth"
	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
)

const tokensYAML = `
tokens:
  - {name: acme-api, token: acme-api-secret-0001, role: api, tenants: [acme]}
  - {name: both-api, token: both-api-secret-0001, role: api, tenants: [acme, globex]}
  - {name: all-api, token: all-api-secret-00001, role: api, tenants: ["*"]}
  - {name: acme-ingest, token: acme-ingest-secret-1, role: ingest, tenants: [acme]}
  - {name: scraper, token: scraper-secret-00001, role: metrics, tenants: ["*"]}
`

// tenantStory is one tenant's calls: in a session, a retryable failure
// re-sent with unchanged arguments that then succeeds, an empty result, and
// an invalid-argument error, so that every endpoint has rows for it.
func tenantStory(tenant, server, tool, argKey string) []pipeline.Call {
	base := now.Add(-2 * time.Hour)
	mk := func(i int, at time.Duration, category string, failure bool, code int64) pipeline.Call {
		ts := base.Add(at)
		c := pipeline.Call{Time: ts, TimeMs: ts.UnixMilli(), DurationMs: 30, Tenant: tenant, Server: server, Tool: tool,
			SessionID: tenant + "-s", SessionKey: tenant + "-s", RequestID: fmt.Sprint(i), CallID: uint64(len(tenant)*1000 + i),
			Source: "capture", ArgsJSON: `{"` + argKey + `":"v"}`, ArgsHash: 42, ArgKeys: []string{argKey}, ArgValues: []string{"v"},
			HasResponse: 1, IsError: -1, Category: category, RPCCode: code, ContentBlocks: 1, DeclaredRetryable: -1,
			ExpectedRetryable: 0, ClassSource: "default", IngestedMs: 1}
		if failure {
			c.IsFailure, c.IsError = 1, 1
			if category == "UNAVAILABLE" {
				c.ExpectedRetryable, c.DeclaredRetryable = 1, 1
			}
		}
		return c
	}
	// A name the server does not have, for /unknown-tools.
	unknown := mk(6, 30*time.Minute, "UNKNOWN_TOOL", true, -32602)
	unknown.Tool = tool + "_v2"
	return []pipeline.Call{
		mk(1, 0, "UNAVAILABLE", true, 0),
		mk(2, 10*time.Second, "UNAVAILABLE", true, 0),
		mk(3, 20*time.Second, "OK", false, 0),
		mk(4, 10*time.Minute, "EMPTY_RESULT", false, 0),
		mk(5, 20*time.Minute, "INVALID_ARGUMENT", true, -32602),
		unknown,
	}
}

func getWith(t *testing.T, srv *httptest.Server, token, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// analyticsPaths returns every analytics endpoint, from the OpenAPI
// document (which a test keeps equal to the routes).
func analyticsPaths(t *testing.T, srv *httptest.Server) []string {
	t.Helper()
	_, body := getWith(t, srv, "", "/api/v1/openapi.json")
	var doc struct {
		Paths map[string]any `json:"paths"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil || len(doc.Paths) == 0 {
		t.Fatalf("openapi.json: %v %s", err, body)
	}
	var out []string
	for p := range doc.Paths {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// rowsOf returns a response's rows without its from/to echo, which differs
// between two requests only by when they ran.
func rowsOf(t *testing.T, body string) string {
	t.Helper()
	var r struct {
		Rows json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return string(r.Rows)
}

// TestTenantIsolation: an api token for tenant acme can neither read nor
// infer tenant globex through any endpoint or filter, on both engines.
func TestTenantIsolation(t *testing.T) {
	tokens, err := auth.Parse("test", []byte(tokensYAML))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, append(tenantStory("acme", "kb", "search_docs", "department"),
				tenantStory("globex", "b_secret_server", "b_secret_tool", "b_secret_key")...))
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			srv := httptest.NewServer(api.New(e.DB, prometheus.NewRegistry(), log, api.Config{Now: func() time.Time { return now }, Tokens: tokens}))
			t.Cleanup(srv.Close)
			const acme, all = "acme-api-secret-0001", "all-api-secret-00001"
			leaks := func(body string) bool { return strings.Contains(body, "globex") || strings.Contains(body, "b_secret") }
			visible, byPair := 0, 0
			for _, path := range analyticsPaths(t, srv) {
				q := "?from=2026-11-29T00:00:00Z&to=2026-11-30T00:00:00Z"
				if path == "/api/v1/invalid-argument-spikes" {
					q += "&min_calls=1"
				}
				if path == "/api/v1/misclassifications" {
					q += "&min_chains=1"
				}
				if path == "/api/v1/retry-loops" { // the story's chain has three calls
					q += "&min_attempts=3"
				}
				st, own := getWith(t, srv, acme, path+q)
				if st != http.StatusOK || leaks(own) {
					t.Errorf("%s with the acme token: %d %s", path, st, own)
				}
				if st, body := getWith(t, srv, acme, path+q+"&tenant=acme"); st != http.StatusOK || rowsOf(t, body) != rowsOf(t, own) {
					t.Errorf("%s tenant=acme: %d %s, want the same rows as without", path, st, body)
				}
				if st, body := getWith(t, srv, acme, path+q+"&tenant=globex"); st != http.StatusForbidden || leaks(strings.ReplaceAll(body, `tenant \"globex\"`, "")) {
					t.Errorf("%s tenant=globex with the acme token: %d %s, want 403", path, st, body)
				}
				// Filters on the other tenant's names answer exactly as on
				// names that exist nowhere: nothing to infer.
				for _, f := range []string{"tool=b_secret_tool", "server=b_secret_server"} {
					_, got := getWith(t, srv, acme, path+q+"&"+f)
					_, none := getWith(t, srv, acme, path+q+"&"+strings.Split(f, "=")[0]+"=zz_nowhere")
					if rowsOf(t, got) != rowsOf(t, none) {
						t.Errorf("%s %s with the acme token: %s, but for a name that exists nowhere: %s", path, f, got, none)
					}
				}
				if path == "/api/v1/empty-results" {
					_, got := getWith(t, srv, acme, path+q+"&arg_key=b_secret_key")
					_, none := getWith(t, srv, acme, path+q+"&arg_key=zz_nowhere")
					if rowsOf(t, got) != rowsOf(t, none) {
						t.Errorf("arg_key of the other tenant: %s vs %s", got, none)
					}
				}
				if _, body := getWith(t, srv, all, path+q); leaks(body) {
					visible++
				}
				// by=pair names each row's tenant: the acme token's rows name
				// acme only, the all-tenants token's globex too.
				if st, mine := getWith(t, srv, acme, path+q+"&by=pair"); st == http.StatusOK {
					_, every := getWith(t, srv, all, path+q+"&by=pair")
					named := !strings.Contains(every, `"rows":[]`) // misclassifications has no rows here
					if leaks(mine) || named && (!strings.Contains(mine, `"tenant":"acme"`) || !strings.Contains(every, `"tenant":"globex"`)) {
						t.Errorf("%s by=pair: the acme token sees %s, the all-tenants token %s", path, mine, every)
					}
					byPair++
				}
				if st, body := getWith(t, srv, "", path+q); st != http.StatusUnauthorized {
					t.Errorf("%s without a token: %d %s, want 401", path, st, body)
				}
				if st, _ := getWith(t, srv, "acme-ingest-secret-1", path+q); st != http.StatusForbidden {
					t.Errorf("%s with an ingest token: %d, want 403", path, st)
				}
				if st, _ := getWith(t, srv, "no-such-token-0000000", path+q); st != http.StatusUnauthorized {
					t.Errorf("%s with an unknown token: %d, want 401", path, st)
				}
			}
			if byPair != 3 {
				t.Errorf("%d endpoints take by=pair, want the 3 chain endpoints", byPair)
			}
			if visible < 5 {
				t.Errorf("the all-tenants token sees globex on %d endpoints: the fixtures do not exercise the scoping", visible)
			}
			_, both := getWith(t, srv, "both-api-secret-0001", "/api/v1/overview?from=2026-11-29T00:00:00Z&to=2026-11-30T00:00:00Z")
			if !strings.Contains(both, "b_secret_tool") || !strings.Contains(both, "search_docs") {
				t.Errorf("a token for acme and globex sees: %s", both)
			}
			for _, c := range []struct {
				token string
				want  int
			}{{"", 401}, {acme, 403}, {"scraper-secret-00001", 200}} {
				if st, _ := getWith(t, srv, c.token, "/metrics"); st != c.want {
					t.Errorf("/metrics with token %q: %d, want %d", c.token, st, c.want)
				}
			}
			for _, p := range []string{"/healthz", "/readyz", "/api/v1/openapi.json"} {
				if st, _ := getWith(t, srv, "", p); st != http.StatusOK {
					t.Errorf("%s without a token: %d, want 200", p, st)
				}
			}
		})
	}
}

// TestHostileValuesOnEveryEndpoint sends injection-shaped values in every
// filter of every endpoint: each is bound, so the answer is 200 with no rows
// (or 400 for a malformed time), never 500, and the data is intact. A
// stored tool name that looks like SQL is found by an exact filter.
func TestHostileValuesOnEveryEndpoint(t *testing.T) {
	hostile := []string{"' OR 1=1 --", `\' OR \'1\'=\'1`, "x'); DROP TABLE calls; --", "@tenant", "{tool:String}", "`calls`",
		"1 UNION SELECT * FROM system.users", "é\u0000x", strings.Repeat("'", 200)}
	const sqlTool = "search'; DROP TABLE calls; --"
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			story := tenantStory("acme", "kb", sqlTool, "q")
			e.Insert(t, story)
			srv := newServer(t, e.DB)
			for _, path := range analyticsPaths(t, srv) {
				params := []string{"tool", "server", "tenant"}
				switch path {
				case "/api/v1/empty-results":
					params = append(params, "arg_key")
				case "/api/v1/calls":
					params = append(params, "arg_key", "session", "trace_id")
				}
				for _, p := range params {
					for _, v := range hostile {
						st, body := getWith(t, srv, "", path+"?from=2026-11-29T00:00:00Z&to=2026-11-30T00:00:00Z&"+p+"="+url.QueryEscape(v))
						if st != http.StatusOK || rowsOf(t, body) != "[]" && !strings.Contains(rowsOf(t, body), `"calls":0`) {
							t.Errorf("%s %s=%q: %d %s, want 200 and no rows", path, p, v, st, body)
						}
					}
				}
				if path == "/api/v1/calls" {
					for _, v := range hostile {
						st, body := getWith(t, srv, "", path+"?from=2026-11-29T00:00:00Z&to=2026-11-30T00:00:00Z&arg_key=q&arg_value="+url.QueryEscape(v))
						if st != http.StatusOK || rowsOf(t, body) != "[]" {
							t.Errorf("%s arg_value=%q: %d %s, want 200 and no rows", path, v, st, body)
						}
					}
				}
				for _, v := range hostile {
					if st, body := getWith(t, srv, "", path+"?from="+url.QueryEscape(v)); st != http.StatusBadRequest {
						t.Errorf("%s from=%q: %d %s, want 400", path, v, st, body)
					}
				}
			}
			st, body := getWith(t, srv, "", "/api/v1/failure-rates?from=2026-11-29T00:00:00Z&to=2026-11-30T00:00:00Z&tool="+url.QueryEscape(sqlTool))
			if st != http.StatusOK || !strings.Contains(body, `"calls":5`) {
				t.Errorf("exact filter on the stored SQL-looking tool name: %d %s, want its 5 calls", st, body)
			}
		})
	}
}
