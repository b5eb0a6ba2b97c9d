package pipeline

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"time"
)

// ToolsIngest serves POST /v1/tools: one server's tool list, as
// ParseToolList reads it, recorded with Tools.Observe. The tenant,
// server and time query parameters stand in for what the body leaves out
// (a bare tools/list result names neither); the time defaults to now. The
// body is bounded like POST /v1/calls, gzip accepted. The answer is
// {"tools": n}, or 4xx {"error": ...} with nothing recorded.
type ToolsIngest struct {
	proc *Processor
	m    *Metrics
	cfg  HTTPConfig
	log  *slog.Logger
	now  func() time.Time
}

// NewToolsIngest returns the handler; proc.Tools must be set, and
// proc.Decode's tenant settings apply.
func NewToolsIngest(proc *Processor, m *Metrics, cfg HTTPConfig, log *slog.Logger) *ToolsIngest {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 16 << 20
	}
	if cfg.MaxDecompressedBytes <= 0 {
		cfg.MaxDecompressedBytes = 8 * cfg.MaxBodyBytes
	}
	return &ToolsIngest{proc: proc, m: m, cfg: cfg, log: log, now: time.Now}
}

// ServeHTTP handles POST /v1/tools.
func (h *ToolsIngest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, err := h.tools(r)
	if err != nil {
		status := http.StatusInternalServerError
		var he *httpError
		if errors.As(err, &he) {
			status = he.status
			h.m.rejected.WithLabelValues(he.reason).Inc()
		} else {
			h.log.Error("tools request failed", "err", err)
		}
		writeJSON(w, status, map[string]any{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": n})
}

func (h *ToolsIngest) tools(r *http.Request) (int, error) {
	if r.Method != http.MethodPost {
		return 0, &httpError{http.StatusMethodNotAllowed, "method", "use POST with a JSON tool list"}
	}
	if h.proc.Tools == nil {
		return 0, errors.New("tool definitions are not captured by this process")
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" && mt != "text/plain" {
			return 0, &httpError{http.StatusUnsupportedMediaType, "content_type",
				fmt.Sprintf("Content-Type %q not supported: send application/json", ct)}
		}
	}
	body := io.Reader(http.MaxBytesReader(nil, r.Body, h.cfg.MaxBodyBytes))
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return 0, &httpError{http.StatusBadRequest, "bad_gzip", "gzip body: " + err.Error()}
		}
		defer zr.Close()
		body = &limitedReader{r: zr, left: h.cfg.MaxDecompressedBytes}
	default:
		return 0, &httpError{http.StatusUnsupportedMediaType, "content_encoding",
			fmt.Sprintf("Content-Encoding %q not supported: send gzip or none", enc)}
	}
	b, err := io.ReadAll(body)
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return 0, &httpError{http.StatusRequestEntityTooLarge, "body_too_large",
				fmt.Sprintf("body exceeds %d bytes: raise -max-body-bytes", h.cfg.MaxBodyBytes)}
		case errors.Is(err, errDecompressedTooLarge):
			return 0, &httpError{http.StatusRequestEntityTooLarge, "decompressed_too_large",
				fmt.Sprintf("body exceeds %d bytes after decompression: raise -max-decompressed-bytes", h.cfg.MaxDecompressedBytes)}
		default:
			return 0, &httpError{http.StatusBadRequest, "bad_body", "read body: " + err.Error()}
		}
	}
	q := r.URL.Query()
	at := h.now()
	if v := q.Get("time"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return 0, &httpError{http.StatusBadRequest, "bad_tools", fmt.Sprintf("time: want RFC 3339, got %q", v)}
		}
		at = t
	}
	defs, err := ParseToolList(b, q.Get("tenant"), q.Get("server"), at, &h.proc.Decode)
	if err != nil {
		return 0, &httpError{http.StatusBadRequest, "bad_tools", err.Error()}
	}
	return h.proc.Tools.Observe(defs, ToolSourceAPI), nil
}
