package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// HTTPConfig bounds the ingest HTTP endpoints.
type HTTPConfig struct {
	MaxBodyBytes         int64 // request body as sent (-max-body-bytes)
	MaxDecompressedBytes int64 // body after gzip decompression (-max-decompressed-bytes)
	DefaultTenant        string
}

// Ingest serves POST /v1/calls: an NDJSON body of capture lines, gzip
// accepted, answered with a Result. Accepted calls are queued as one unit.
type Ingest struct {
	proc    *Processor
	batcher *Batcher
	m       *Metrics
	cfg     HTTPConfig
	log     *slog.Logger
	now     func() time.Time
	// bodies holds *[]Call slices for the calls of one request: the
	// Batcher copies what it queues, so a request's slice is reused by the
	// next one instead of being grown from nothing each time.
	bodies sync.Pool
	gzip   gzipPool
}

// maxPooledCalls is the largest per-request call slice Ingest keeps for
// reuse (a 4,096-call body; larger ones are allocated each time).
const maxPooledCalls = 4096

// NewIngest returns the ingest handler.
func NewIngest(proc *Processor, b *Batcher, m *Metrics, cfg HTTPConfig, log *slog.Logger) *Ingest {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 16 << 20
	}
	if cfg.MaxDecompressedBytes <= 0 {
		cfg.MaxDecompressedBytes = 8 * cfg.MaxBodyBytes
	}
	if cfg.DefaultTenant == "" {
		cfg.DefaultTenant = "default"
	}
	return &Ingest{proc: proc, batcher: b, m: m, cfg: cfg, log: log, now: time.Now}
}

type httpError struct {
	status int
	reason string // bounded metric label
	msg    string
}

func (e *httpError) Error() string { return e.msg }

// ServeHTTP handles POST /v1/calls.
func (h *Ingest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	res, err := h.calls(r)
	if err != nil {
		status := http.StatusInternalServerError
		var he *httpError
		switch {
		case errors.As(err, &he):
			status = he.status
			h.m.rejected.WithLabelValues(he.reason).Inc()
		case errors.Is(err, ErrBufferFull):
			status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "5")
		}
		if status >= 500 && status != http.StatusServiceUnavailable {
			h.log.Error("ingest request failed", "err", err)
		}
		writeJSON(w, status, map[string]any{"error": err.Error()})
		return
	}
	status := http.StatusOK
	if res.Accepted == 0 && res.Rejected > 0 {
		status = http.StatusBadRequest
	}
	writeJSON(w, status, res)
}

func (h *Ingest) calls(r *http.Request) (Result, error) {
	if r.Method != http.MethodPost {
		return Result{}, &httpError{http.StatusMethodNotAllowed, "method", "use POST with an NDJSON body"}
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		switch {
		case err != nil:
			return Result{}, &httpError{http.StatusUnsupportedMediaType, "content_type", fmt.Sprintf("bad Content-Type %q", ct)}
		case mt != "application/x-ndjson" && mt != "application/jsonl" && mt != "application/json" && mt != "text/plain":
			return Result{}, &httpError{http.StatusUnsupportedMediaType, "content_type",
				fmt.Sprintf("Content-Type %q not supported: send application/x-ndjson (one capture per line)", mt)}
		}
	}
	body := io.Reader(http.MaxBytesReader(nil, r.Body, h.cfg.MaxBodyBytes))
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := h.gzip.reader(body)
		if err != nil {
			return Result{}, &httpError{http.StatusBadRequest, "bad_gzip", "gzip body: " + err.Error()}
		}
		defer h.gzip.put(zr)
		body = &limitedReader{r: zr, left: h.cfg.MaxDecompressedBytes}
	default:
		return Result{}, &httpError{http.StatusUnsupportedMediaType, "content_encoding",
			fmt.Sprintf("Content-Encoding %q not supported: send gzip or none", enc)}
	}

	now := h.now()
	pooled, _ := h.bodies.Get().(*[]Call)
	if pooled == nil {
		pooled = new([]Call)
	}
	calls := (*pooled)[:0]
	defer func() {
		if cap(calls) <= maxPooledCalls {
			clear(calls) // drop the strings; the Batcher has its copies
			*pooled = calls[:0]
			h.bodies.Put(pooled)
		}
	}()
	var dead []DeadLetter
	res, err := h.proc.ReadNDJSON(body, h.cfg.DefaultTenant, now,
		func(c Call) { calls = append(calls, c) },
		func(d DeadLetter) { dead = append(dead, d) })
	if err != nil {
		// A body we could not read whole is refused whole: the sender retries
		// it, and idempotent call keys make the resend harmless.
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return Result{}, &httpError{http.StatusRequestEntityTooLarge, "body_too_large",
				fmt.Sprintf("body exceeds %d bytes: split it, or raise -max-body-bytes", h.cfg.MaxBodyBytes)}
		case errors.Is(err, errDecompressedTooLarge):
			return Result{}, &httpError{http.StatusRequestEntityTooLarge, "decompressed_too_large",
				fmt.Sprintf("body exceeds %d bytes after decompression: split it, or raise -max-decompressed-bytes", h.cfg.MaxDecompressedBytes)}
		default:
			return Result{}, &httpError{http.StatusBadRequest, "bad_body", "read body: " + err.Error()}
		}
	}
	if err := h.batcher.Add(calls, dead); err != nil {
		return Result{}, err
	}
	h.m.lines.WithLabelValues("capture", "accepted").Add(float64(res.Accepted))
	h.m.lines.WithLabelValues("capture", "skipped").Add(float64(res.Skipped))
	h.m.lines.WithLabelValues("capture", "rejected").Add(float64(res.Rejected))
	if res.Rejected > 0 {
		h.m.rejected.WithLabelValues("bad_line").Add(float64(res.Rejected))
	}
	h.m.argsCapped.Add(float64(res.Capped))
	h.m.countClassified(calls)
	return res, nil
}

var errDecompressedTooLarge = errors.New("decompressed body too large")

// limitedReader fails, rather than truncating, past its limit.
type limitedReader struct {
	r    io.Reader
	left int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		var one [1]byte
		if n, _ := l.r.Read(one[:]); n > 0 {
			return 0, errDecompressedTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
