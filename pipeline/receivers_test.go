package pipeline

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mcplens/mcplens/auth"
	"github.com/mcplens/mcplens/pipeline/classify"
)

const receiverTokens = `
- {name: acme-ingest, token: acme-ingest-secret-1, role: ingest, tenants: [acme]}
- {name: collector, token: collector-secret-001, role: ingest, tenants: ["*"]}
- {name: acme-api, token: acme-api-secret-0001, role: api, tenants: [acme]}
- {name: scraper, token: scraper-secret-00001, role: metrics, tenants: ["*"]}
`

type receiverRig struct {
	ins *memInserter
	b   *Batcher
	m   *Metrics
	r   *Receivers
}

func newReceiverRig(t *testing.T, maxConcurrent int) *receiverRig {
	t.Helper()
	tokens, err := auth.Parse("test", []byte(receiverTokens))
	if err != nil {
		t.Fatal(err)
	}
	g := &receiverRig{ins: &memInserter{}, m: NewMetrics(prometheus.NewRegistry())}
	g.b = NewBatcher(g.ins, BatchConfig{BatchSize: 100, QueueCapacity: 1000, FlushEvery: time.Hour}, g.m, quietLog())
	p := &Processor{Classifier: classify.Default(), Decode: DecodeOptions{Now: testNow}}
	g.r = NewReceivers(p, g.b, g.m, ReceiversConfig{Tokens: tokens, MaxConcurrent: maxConcurrent,
		HTTP: HTTPConfig{DefaultTenant: "default"}}, quietLog())
	return g
}

func (g *receiverRig) post(h http.Handler, token, ct string, body io.Reader) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/", body)
	req.Header.Set("Content-Type", ct)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// drain flushes held spans and queued calls and returns the tenants of the
// inserted calls and dead letters.
func (g *receiverRig) drain(t *testing.T) (calls, dead []string) {
	t.Helper()
	if err := g.r.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.b.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, c := range g.ins.calls {
		calls = append(calls, c.Tenant)
	}
	for _, d := range g.ins.dead {
		dead = append(dead, d.Tenant)
	}
	g.ins.calls, g.ins.dead = nil, nil
	return calls, dead
}

func line(tenantField string) string {
	return strings.Replace(goodLine, `"tenant":"acme",`, tenantField, 1) + "\n"
}

// TestIngestTokensPinTheTenant: an ingest token for acme writes acme rows
// only, over /v1/calls, /v1/traces and gRPC; other tenants named in the
// input are rejected with a reason and dead-lettered under acme.
func TestIngestTokensPinTheTenant(t *testing.T) {
	otlpBody, err := os.ReadFile("testdata/otlp/fastmcp.json") // resource attribute mcplens.tenant=globex
	if err != nil {
		t.Fatal(err)
	}
	const acme, collector = "acme-ingest-secret-1", "collector-secret-001"
	for _, tc := range []struct {
		name   string
		token  string
		body   string
		status int
		calls  string // tenants of the stored calls
		dead   string // tenants of the dead letters
	}{
		{"no tenant field: the token's tenant", acme, line(""), 200, "acme", ""},
		{"its own tenant", acme, line(`"tenant":"acme",`), 200, "acme", ""},
		{"another tenant is rejected", acme, line(`"tenant":"globex",`), 400, "", "acme"},
		{"duplicate keys: the last one counts", acme, line(`"tenant":"acme","tenant":"globex",`), 400, "", "acme"},
		{"a mixed body keeps the good lines", acme, line(`"tenant":"globex",`) + line(""), 200, "acme", "acme"},
		{"an all-tenants token writes what the capture names", collector, line(`"tenant":"globex",`) + line(""), 200, "globex default", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newReceiverRig(t, 8)
			rec := g.post(g.r.Calls(), tc.token, "application/x-ndjson", strings.NewReader(tc.body))
			if rec.Code != tc.status {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, tc.status)
			}
			if tc.dead != "" && !strings.Contains(rec.Body.String(), `tenant \"globex\" is not allowed for this token`) {
				t.Errorf("the rejection does not name the tenant: %s", rec.Body)
			}
			calls, dead := g.drain(t)
			if strings.Join(calls, " ") != tc.calls || strings.Join(dead, " ") != tc.dead {
				t.Errorf("stored calls of %v and dead letters of %v, want %q and %q", calls, dead, tc.calls, tc.dead)
			}
		})
	}

	t.Run("otlp over http", func(t *testing.T) {
		g := newReceiverRig(t, 8)
		rec := g.post(g.r.Traces(), acme, "application/json", strings.NewReader(string(otlpBody)))
		var resp struct {
			PartialSuccess struct {
				RejectedSpans string `json:"rejectedSpans"`
				ErrorMessage  string `json:"errorMessage"`
			} `json:"partialSuccess"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || rec.Code != 200 || resp.PartialSuccess.RejectedSpans == "" ||
			!strings.Contains(resp.PartialSuccess.ErrorMessage, `tenant "globex" is not allowed`) {
			t.Fatalf("%d %s: want every globex span rejected by name", rec.Code, rec.Body)
		}
		if calls, dead := g.drain(t); len(calls) != 0 || len(dead) == 0 || strings.Contains(strings.Join(dead, " "), "globex") {
			t.Errorf("stored calls of %v, dead letters of %v: want none, and dead letters under acme", calls, dead)
		}
		rec = g.post(g.r.Traces(), collector, "application/json", strings.NewReader(string(otlpBody)))
		if calls, _ := g.drain(t); rec.Code != 200 || len(calls) != 4 || calls[0] != "globex" {
			t.Errorf("all-tenants token: %d %s, stored %v", rec.Code, rec.Body, calls)
		}
	})

	t.Run("otlp over grpc", func(t *testing.T) {
		g := newReceiverRig(t, 8)
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalJSON(otlpBody); err != nil {
			t.Fatal(err)
		}
		srv := &grpcReceivers{r: g.r}
		for _, c := range []struct {
			md   metadata.MD
			want codes.Code
		}{
			{metadata.MD{}, codes.Unauthenticated},
			{metadata.Pairs("authorization", "Bearer wrong-secret-000000"), codes.Unauthenticated},
			{metadata.Pairs("authorization", "Bearer acme-api-secret-0001"), codes.PermissionDenied},
		} {
			if _, err := srv.Export(metadata.NewIncomingContext(context.Background(), c.md), req); status.Code(err) != c.want {
				t.Errorf("metadata %v: %v, want %s", c.md, err, c.want)
			}
		}
		resp, err := srv.Export(metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+acme)), req)
		if err != nil || resp.PartialSuccess().RejectedSpans() == 0 {
			t.Fatalf("acme token exporting globex spans: %v, rejected %d", err, resp.PartialSuccess().RejectedSpans())
		}
		if calls, _ := g.drain(t); len(calls) != 0 {
			t.Errorf("stored %v", calls)
		}
	})
}

func TestReceiversRefuseUnauthorizedAndExcessRequests(t *testing.T) {
	g := newReceiverRig(t, 1)
	for _, c := range []struct {
		token string
		want  int
	}{{"", 401}, {"wrong-secret-0000000", 401}, {"acme-api-secret-0001", 403}, {"scraper-secret-00001", 403}} {
		if rec := g.post(g.r.Calls(), c.token, "application/x-ndjson", strings.NewReader(goodLine)); rec.Code != c.want {
			t.Errorf("token %q: %d %s, want %d", c.token, rec.Code, rec.Body, c.want)
		}
	}
	if got := testutil.ToFloat64(g.m.rejected.WithLabelValues("unauthenticated")); got != 2 {
		t.Errorf("unauthenticated counted %v, want 2", got)
	}

	// One request holds the only slot while its body trickles in: the
	// next is refused at once with 429 and Retry-After.
	pr, pw := io.Pipe()
	done := make(chan int)
	go func() { done <- g.post(g.r.Calls(), "acme-ingest-secret-1", "application/x-ndjson", pr).Code }()
	for testutil.ToFloat64(g.m.inflight) != 1 {
		time.Sleep(time.Millisecond)
	}
	rec := g.post(g.r.Calls(), "acme-ingest-secret-1", "application/x-ndjson", strings.NewReader(goodLine))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "-max-concurrent-requests") {
		t.Errorf("second request: %d %v %s, want 429 with Retry-After naming the flag", rec.Code, rec.Header(), rec.Body)
	}
	pw.Write([]byte(goodLine + "\n"))
	pw.Close()
	if code := <-done; code != 200 {
		t.Errorf("the slow request: %d", code)
	}
	if got := testutil.ToFloat64(g.m.rejected.WithLabelValues("too_many_requests")); got != 1 {
		t.Errorf("too_many_requests counted %v, want 1", got)
	}

	metrics := g.r.Metrics(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	for _, c := range []struct {
		token string
		want  int
	}{{"", 401}, {"acme-ingest-secret-1", 403}, {"scraper-secret-00001", 200}} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		rec := httptest.NewRecorder()
		metrics.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("/metrics with %q: %d, want %d", c.token, rec.Code, c.want)
		}
	}
}

func TestReceiversWithoutIngestTokens(t *testing.T) {
	tokens, err := auth.Parse("test", []byte(`- {token: acme-api-secret-0001, role: api, tenants: [acme]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(prometheus.NewRegistry())
	b := NewBatcher(&memInserter{}, BatchConfig{BatchSize: 10, QueueCapacity: 100, FlushEvery: time.Hour}, m, quietLog())
	r := NewReceivers(&Processor{Classifier: classify.Default()}, b, m, ReceiversConfig{Tokens: tokens}, quietLog())
	r.GRPCServer().Stop()
	req := httptest.NewRequest(http.MethodPost, "/v1/calls", strings.NewReader(goodLine))
	req.Header.Set("Authorization", "Bearer acme-api-secret-0001")
	rec := httptest.NewRecorder()
	r.Calls().ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || r.Held() != 0 || r.Flush(t.Context()) != nil {
		t.Errorf("an api token on ingest: %d %s, want 403", rec.Code, rec.Body)
	}
}
