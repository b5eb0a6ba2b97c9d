package pipeline

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/pipeline/classify"
)

const goodLine = `{"time":"2026-11-29T10:00:00.123Z","tenant":"acme","server":"kb","session_id":"s1","request":{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_docs","arguments":{"department":"finace"}}},"response":{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"未找到匹配文档"}],"isError":false}}}`

func newTestIngest(t *testing.T, capacity int, cfg HTTPConfig) (*Ingest, *Batcher) {
	t.Helper()
	m := NewMetrics(prometheus.NewRegistry())
	b := NewBatcher(&memInserter{}, BatchConfig{BatchSize: 1, QueueCapacity: capacity, FlushEvery: time.Hour}, m, quietLog())
	p := &Processor{Classifier: classify.Default()}
	return NewIngest(p, b, m, cfg, quietLog()), b
}

func gz(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func TestIngestHTTP(t *testing.T) {
	longLine := `{"time":"2026-11-29T10:00:00Z","pad":"` + strings.Repeat("x", 2000) + `"}`
	bomb := gz(strings.Repeat(goodLine+"\n", 200)) // ~70 KB decompressed from ~1 KB
	for _, tc := range []struct {
		name     string
		method   string
		headers  map[string]string
		body     []byte
		status   int
		want     string // substring of the response body
		queued   int
		capacity int
	}{
		{name: "one good line", body: []byte(goodLine + "\n"), status: 200, want: `{"accepted":1,"skipped":0,"rejected":0,"errors":[]}`, queued: 1},
		{name: "gzip", headers: map[string]string{"Content-Encoding": "gzip"}, body: gz(goodLine + "\n" + goodLine), status: 200, want: `"accepted":2`, queued: 2},
		{name: "blank lines ignored, bad line reported with its number", body: []byte("\n" + goodLine + "\n\n{oops\n"), status: 200,
			want: `"accepted":1,"skipped":0,"rejected":1,"errors":[{"line":4,`, queued: 1},
		{name: "a line over the limit is rejected, the rest accepted", body: []byte(longLine + "\n" + goodLine), status: 200,
			want: `"errors":[{"line":1,"reason":"line exceeds 1024 bytes"}]`, queued: 1},
		{name: "not tools/call is skipped", body: []byte(`{"time":"2026-11-29T10:00:00Z","request":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}`), status: 200, want: `"skipped":1`},
		{name: "every line bad is a 400", body: []byte("nope\n[1]\n"), status: 400, want: `"rejected":2`},
		{name: "wrong method", method: http.MethodGet, status: 405, want: "use POST"},
		{name: "unsupported content type", headers: map[string]string{"Content-Type": "application/x-protobuf"}, body: []byte(goodLine), status: 415, want: "application/x-ndjson"},
		{name: "unsupported encoding", headers: map[string]string{"Content-Encoding": "br"}, body: []byte(goodLine), status: 415, want: `Content-Encoding \"br\"`},
		{name: "bad gzip", headers: map[string]string{"Content-Encoding": "gzip"}, body: []byte("not gzip"), status: 400, want: "gzip body"},
		{name: "body over the limit", body: bytes.Repeat([]byte(goodLine+"\n"), 20), status: 413, want: "-max-body-bytes"},
		{name: "gzip bomb", headers: map[string]string{"Content-Encoding": "gzip"}, body: bomb, status: 413, want: "-max-decompressed-bytes"},
		{name: "queue full", body: []byte(goodLine + "\n" + goodLine), capacity: 1, status: 503, want: "raise -queue-capacity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			capacity := tc.capacity
			if capacity == 0 {
				capacity = 100
			}
			h, b := newTestIngest(t, capacity, HTTPConfig{MaxBodyBytes: 4096, MaxDecompressedBytes: 16384})
			h.proc.Decode.MaxLineBytes = 1024
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, "/v1/calls", bytes.NewReader(tc.body))
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
				t.Fatalf("got %d %s, want %d containing %s", rec.Code, rec.Body.String(), tc.status, tc.want)
			}
			if !json.Valid(rec.Body.Bytes()) {
				t.Errorf("response is not JSON: %s", rec.Body.String())
			}
			if tc.status == 503 && rec.Header().Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			if got := b.Queued(); got != tc.queued {
				t.Errorf("queued %d calls, want %d", got, tc.queued)
			}
		})
	}
}

// TestIngestReusesItsGzipReaders sends gzip bodies one after another to
// one handler, which reuses its readers and call slices: a broken body or
// a bomb in between must leave the next body decoded as if it came alone.
func TestIngestReusesItsGzipReaders(t *testing.T) {
	h, b := newTestIngest(t, 1000, HTTPConfig{MaxBodyBytes: 4096, MaxDecompressedBytes: 16384})
	bomb := gz(strings.Repeat(goodLine+"\n", 200))
	queued := 0
	for i, tc := range []struct {
		body   []byte
		status int
		calls  int
	}{
		{gz(goodLine + "\n" + goodLine), 200, 2},
		{[]byte("not gzip"), 400, 0},
		{gz(goodLine), 200, 1},
		{bomb, 413, 0},
		{gz(goodLine + "\n" + goodLine + "\n" + goodLine), 200, 3},
		{gz(goodLine + "\n")[:20], 400, 0}, // cut short
		{gz(goodLine), 200, 1},
	} {
		req := httptest.NewRequest(http.MethodPost, "/v1/calls", bytes.NewReader(tc.body))
		req.Header.Set("Content-Encoding", "gzip")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		queued += tc.calls
		if rec.Code != tc.status || b.Queued() != queued {
			t.Fatalf("body %d: %d %s, %d queued; want %d, %d queued", i, rec.Code, rec.Body, b.Queued(), tc.status, queued)
		}
	}
}

func TestIngestDeadLettersCarryTheReason(t *testing.T) {
	ins := &memInserter{}
	m := NewMetrics(prometheus.NewRegistry())
	b := NewBatcher(ins, BatchConfig{BatchSize: 10, QueueCapacity: 100, FlushEvery: time.Hour}, m, quietLog())
	h := NewIngest(&Processor{Classifier: classify.Default()}, b, m, HTTPConfig{DefaultTenant: "t1"}, quietLog())
	req := httptest.NewRequest(http.MethodPost, "/v1/calls", strings.NewReader(goodLine+"\n{\"time\":1}\n"))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if err := b.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(ins.dead) != 1 || ins.dead[0].Line != 2 || ins.dead[0].Tenant != "t1" || ins.dead[0].Payload != `{"time":1}` || ins.dead[0].Reason == "" {
		t.Errorf("dead letters: %+v", ins.dead)
	}
	if len(ins.calls) != 1 || ins.calls[0].Category != "EMPTY_RESULT" || ins.calls[0].TaxonomyVersion == "" {
		t.Errorf("accepted call not classified: %+v", ins.calls)
	}
}
