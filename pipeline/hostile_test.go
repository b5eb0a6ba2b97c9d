package pipeline

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcplens/mcplens/pipeline/classify"
)

// TestHostileInput posts each file of testdata/hostile through the
// receivers that ingest serves, with the default limits, and checks the
// answer: the status, the accepted/rejected/capped counts, a reason per
// rejected line, a dead letter and a counted rejection for each. Nothing
// may crash the handler.
func TestHostileInput(t *testing.T) {
	for _, tc := range []struct {
		file     string
		status   int
		accepted int
		capped   int
		reasons  []string // one substring per rejected line, in order
	}{
		{"truncated_json.ndjson", 400, 0, 0, []string{"unexpected end of input", "unterminated string"}},
		{"wrong_types.ndjson", 200, 1, 0, []string{"time: want RFC 3339 string, got number", "tenant: want string, got object",
			"request.params: want object, got array", "request: want object, got string", "got array", "got string", "got null"}},
		{"invalid_utf8.ndjson", 200, 2, 0, nil}, // each bad byte becomes U+FFFD (docs/capture-format.md)
		{"huge_ids.ndjson", 200, 3, 0, []string{"request id: 100000 bytes, more than the limit of 512"}},
		{"duplicate_keys.ndjson", 200, 2, 0, nil}, // the last key wins, as in encoding/json
		{"proto_keys.ndjson", 200, 2, 0, nil},     // plain keys: stored as data, never interpreted
		{"sql_strings.ndjson", 200, 2, 0, nil},    // stored verbatim; every query binds its values
		{"deeply_nested.ndjson", 400, 0, 0, []string{"JSON nesting deeper than 64"}},
		{"ten_thousand_args.ndjson", 200, 1, 1, nil}, // 256 exploded entries kept; args_json whole
		{"long_strings.ndjson", 400, 0, 0, []string{"server: 5000 bytes, more than the limit of 256"}},
		{"control_bytes.ndjson", 200, 1, 0, []string{"control character in string", "unexpected byte 0x00"}},
		{"far_times.ndjson", 400, 0, 0, []string{"out of range (1970 to 2105)", "out of range (1970 to 2105)",
			`want RFC 3339, got "2026-02-30T10:00:00Z"`, `want RFC 3339, got "yesterday"`}},
		{"numbers.ndjson", 200, 1, 0, []string{"duration_ms: 1e308 is out of range", "want a non-negative number, got -5", "unexpected 'N'"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			body, err := os.ReadFile("testdata/hostile/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			ins := &memInserter{}
			m := NewMetrics(prometheus.NewRegistry())
			b := NewBatcher(ins, BatchConfig{BatchSize: 100, QueueCapacity: 1000, FlushEvery: time.Hour}, m, quietLog())
			r := NewReceivers(&Processor{Classifier: classify.Default()}, b, m, ReceiversConfig{}, quietLog())
			rec := httptest.NewRecorder()
			r.Calls().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/calls", bytes.NewReader(body)))
			var res Result
			if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
				t.Fatalf("response %q is not a Result: %v", rec.Body, err)
			}
			if rec.Code != tc.status || res.Accepted != tc.accepted || res.Rejected != len(tc.reasons) || res.Capped != tc.capped {
				t.Fatalf("got %d %s\nwant %d with %d accepted, %d rejected, %d capped", rec.Code, rec.Body, tc.status, tc.accepted, len(tc.reasons), tc.capped)
			}
			for i, want := range tc.reasons {
				if !strings.Contains(res.Errors[i].Reason, want) {
					t.Errorf("line %d: reason %q, want it to contain %q", res.Errors[i].Line, res.Errors[i].Reason, want)
				}
			}
			if err := b.Drain(t.Context()); err != nil {
				t.Fatal(err)
			}
			if len(ins.calls) != tc.accepted || len(ins.dead) != len(tc.reasons) {
				t.Errorf("inserted %d calls and %d dead letters, want %d and %d", len(ins.calls), len(ins.dead), tc.accepted, len(tc.reasons))
			}
			if got := testutil.ToFloat64(m.rejected.WithLabelValues("bad_line")); int(got) != len(tc.reasons) {
				t.Errorf("rejected{bad_line} = %v, want %d", got, len(tc.reasons))
			}
			if got := testutil.ToFloat64(m.argsCapped); int(got) != tc.capped {
				t.Errorf("args_capped = %v, want %d", got, tc.capped)
			}
		})
	}
}

// FuzzIngestBody posts arbitrary bodies, seeded with testdata/hostile,
// through the receivers: the answer is always JSON with a 200, 400 or 413,
// and every accepted call is queued.
func FuzzIngestBody(f *testing.F) {
	files, err := filepath.Glob("testdata/hostile/*.ndjson")
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in testdata/hostile: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	m := NewMetrics(prometheus.NewRegistry())
	p := &Processor{Classifier: classify.Default(), Decode: DecodeOptions{MaxLineBytes: 64 << 10}}
	f.Fuzz(func(t *testing.T, body []byte) {
		b := NewBatcher(&memInserter{}, BatchConfig{BatchSize: 100, QueueCapacity: 1 << 20, FlushEvery: time.Hour}, m, quietLog())
		r := NewReceivers(p, b, m, ReceiversConfig{HTTP: HTTPConfig{MaxBodyBytes: 1 << 20}}, quietLog())
		rec := httptest.NewRecorder()
		r.Calls().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/calls", bytes.NewReader(body)))
		if rec.Code != 200 && rec.Code != 400 && rec.Code != 413 {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		var res Result
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
			t.Fatalf("response %q: %v", rec.Body, err)
		}
		if rec.Code == 200 && b.Queued() != res.Accepted {
			t.Fatalf("%d accepted, %d queued", res.Accepted, b.Queued())
		}
	})
}
