package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mcplens/mcplens/auth"
)

// ReceiversConfig wires the receivers.
type ReceiversConfig struct {
	HTTP HTTPConfig
	OTLP OTLPConfig
	// Tokens authenticates every request; nil is open mode (no check,
	// tenants as the captures name them).
	Tokens *auth.Tokens
	// MaxConcurrent bounds the requests served at once over both HTTP
	// endpoints and gRPC (-max-concurrent-requests); more are answered 429
	// (gRPC: UNAVAILABLE) with Retry-After before their bodies are read,
	// which bounds the memory that request bodies take.
	MaxConcurrent int
}

// Receivers are the ingest endpoints, POST /v1/calls, POST /v1/traces,
// POST /v1/tools and OTLP/gRPC, behind authentication and a concurrency
// limit. With tokens, each ingest token gets its own Ingest and OTLP pinned
// to its tenants: a capture or span that names no tenant gets the token's
// first tenant, and one that names a tenant the token does not cover is
// rejected (4xx line or span error with a dead letter), never written. An
// ingest token with tenants ["*"] writes the tenants the input names.
type Receivers struct {
	cfg     ReceiversConfig
	m       *Metrics
	log     *slog.Logger
	sem     chan struct{}
	open    *receiver // open mode
	byToken map[*auth.Token]*receiver
	all     []*receiver
}

type receiver struct {
	name  string // of its pair log's directory (OpenPairLogs)
	calls *Ingest
	otlp  *OTLP
	tools *ToolsIngest
}

// NewReceivers builds the receivers on proc and b.
func NewReceivers(proc *Processor, b *Batcher, m *Metrics, cfg ReceiversConfig, log *slog.Logger) *Receivers {
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = 64
	}
	r := &Receivers{cfg: cfg, m: m, log: log, sem: make(chan struct{}, cfg.MaxConcurrent), byToken: map[*auth.Token]*receiver{}}
	build := func(p *Processor, h HTTPConfig, name string) *receiver {
		rc := &receiver{name: name, calls: NewIngest(p, b, m, h, log), otlp: NewOTLP(p, b, m, h, cfg.OTLP, log),
			tools: NewToolsIngest(p, m, h, log)}
		r.all = append(r.all, rc)
		return rc
	}
	if cfg.Tokens.Len() == 0 {
		r.open = build(proc, cfg.HTTP, "open")
		return r
	}
	for _, t := range cfg.Tokens.WithRole(auth.RoleIngest) {
		p, h := *proc, cfg.HTTP
		if !t.Unrestricted() {
			p.Decode.DefaultTenant = t.Tenants[0]
			p.Decode.Tenants = t.Tenants
			h.DefaultTenant = t.Tenants[0]
		}
		r.byToken[t] = build(&p, h, tokenLogName(t.Name))
	}
	return r
}

// deadLetterTenant returns the tenant under which a dead letter of input
// naming tenant is filed: tenant itself, unless the ingest token's
// allow-list (Tenants) excludes it, then the token's own tenant. A token
// never writes rows, dead letters included, under a tenant it does not
// cover.
func (o *DecodeOptions) deadLetterTenant(tenant string) string {
	if len(o.Tenants) == 0 || slices.Contains(o.Tenants, tenant) {
		return tenant
	}
	return o.tenantOr()
}

// Calls serves POST /v1/calls.
func (r *Receivers) Calls() http.Handler {
	return r.handler(func(rc *receiver) http.Handler { return rc.calls })
}

// Traces serves POST /v1/traces.
func (r *Receivers) Traces() http.Handler {
	return r.handler(func(rc *receiver) http.Handler { return rc.otlp })
}

// Tools serves POST /v1/tools (ToolsIngest), pinned to the token's tenants
// like the other endpoints; it needs the Processor's Tools.
func (r *Receivers) Tools() http.Handler {
	return r.handler(func(rc *receiver) http.Handler { return rc.tools })
}

func (r *Receivers) handler(pick func(*receiver) http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rc, status, err := r.authenticate(req.Header.Get("Authorization"))
		if err != nil {
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="mcplens ingest"`)
			}
			writeJSON(w, status, map[string]any{"error": err.Error()})
			return
		}
		select {
		case r.sem <- struct{}{}:
		default:
			r.m.rejected.WithLabelValues("too_many_requests").Inc()
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": r.busy()})
			return
		}
		r.m.inflight.Inc()
		defer func() { <-r.sem; r.m.inflight.Dec() }()
		pick(rc).ServeHTTP(w, req)
	})
}

func (r *Receivers) busy() string {
	return fmt.Sprintf("more than %d ingest requests at once: retry later, or raise -max-concurrent-requests", cap(r.sem))
}

// authenticate returns the receiver for an Authorization header value, or
// the HTTP status and error to answer.
func (r *Receivers) authenticate(header string) (*receiver, int, error) {
	if r.open != nil {
		return r.open, 0, nil
	}
	t, err := r.cfg.Tokens.Authenticate(header)
	if err != nil {
		r.m.rejected.WithLabelValues("unauthenticated").Inc()
		return nil, http.StatusUnauthorized, err
	}
	rc, ok := r.byToken[t]
	if !ok {
		r.m.rejected.WithLabelValues("forbidden").Inc()
		return nil, http.StatusForbidden, fmt.Errorf("token %q has role %s; sending calls needs role ingest", t.Name, t.Role)
	}
	return rc, 0, nil
}

// Metrics wraps the /metrics handler: with tokens it needs a token of role
// metrics.
func (r *Receivers) Metrics(h http.Handler) http.Handler {
	if r.open != nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		t, err := r.cfg.Tokens.Authenticate(req.Header.Get("Authorization"))
		switch {
		case err != nil:
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcplens metrics"`)
			http.Error(w, err.Error(), http.StatusUnauthorized)
		case t.Role != auth.RoleMetrics:
			http.Error(w, "/metrics needs a token of role metrics", http.StatusForbidden)
		default:
			h.ServeHTTP(w, req)
		}
	})
}

// Run releases held OTLP spans as their pair window passes, until ctx is
// done.
func (r *Receivers) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, rc := range r.all {
		wg.Add(1)
		go func() { defer wg.Done(); rc.otlp.Run(ctx) }()
	}
	wg.Wait()
}

// tokenLogName names the pair log of the receiver of the token named name:
// a file name, whatever the token's name holds.
func tokenLogName(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "token-" + hex.EncodeToString(sum[:8])
}

// OpenPairLogs opens the pair log of every receiver (OTLP.OpenPairLog),
// recovering the spans a crash left held. A log left by a receiver that is
// no longer configured (a token removed) is left on disk, with a warning.
func (r *Receivers) OpenPairLogs() error {
	for i, rc := range r.all {
		if err := rc.otlp.OpenPairLog(rc.name); err != nil {
			for _, o := range r.all[:i] {
				o.otlp.ClosePairLog()
			}
			return err
		}
	}
	if len(r.all) == 0 || r.all[0].otlp.batcher.sp == nil {
		return nil
	}
	dir := pairLogsDir(r.all[0].otlp.batcher.sp.dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if !slices.ContainsFunc(r.all, func(rc *receiver) bool { return rc.name == e.Name() }) {
			r.log.Warn("pair log of a receiver no longer configured (an ingest token removed?): the spans it held stay there until that token is configured again",
				"dir", filepath.Join(dir, e.Name()))
		}
	}
	return nil
}

// ClosePairLogs closes every receiver's pair log (OTLP.ClosePairLog).
// Call it after Flush.
func (r *Receivers) ClosePairLogs() error {
	var err error
	for _, rc := range r.all {
		err = errors.Join(err, rc.otlp.ClosePairLog())
	}
	return err
}

// Flush queues every held OTLP span (OTLP.Flush) of every receiver.
func (r *Receivers) Flush(ctx context.Context) error {
	var err error
	for _, rc := range r.all {
		err = errors.Join(err, rc.otlp.Flush(ctx))
	}
	return err
}

// Held returns the OTLP spans waiting for their other side.
func (r *Receivers) Held() int {
	n := 0
	for _, rc := range r.all {
		n += rc.otlp.Held()
	}
	return n
}

// GRPCServer returns a gRPC server with the OTLP trace service, behind the
// same authentication (the "authorization" metadata) and concurrency limit
// as the HTTP endpoints. Messages are bounded by -max-decompressed-bytes.
func (r *Receivers) GRPCServer() *grpc.Server {
	// The same bound as the HTTP receivers (NewIngest's defaults).
	limit := r.cfg.HTTP.MaxDecompressedBytes
	if limit <= 0 {
		limit = 8 * r.cfg.HTTP.MaxBodyBytes
		if limit <= 0 {
			limit = 8 * (16 << 20)
		}
	}
	s := grpc.NewServer(grpc.MaxRecvMsgSize(int(min(limit, 1<<31-1))))
	ptraceotlp.RegisterGRPCServer(s, &grpcReceivers{r: r})
	return s
}

type grpcReceivers struct {
	ptraceotlp.UnimplementedGRPCServer
	r *Receivers
}

// Export authenticates the export and hands it to the token's OTLP.
func (g *grpcReceivers) Export(ctx context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	rc, st, err := g.r.authenticate(strings.Join(md.Get("authorization"), ""))
	if err != nil {
		code := codes.PermissionDenied
		if st == http.StatusUnauthorized {
			code = codes.Unauthenticated
		}
		return ptraceotlp.NewExportResponse(), status.Error(code, err.Error())
	}
	select {
	case g.r.sem <- struct{}{}:
	default:
		g.r.m.rejected.WithLabelValues("too_many_requests").Inc()
		return ptraceotlp.NewExportResponse(), status.Error(codes.Unavailable, g.r.busy())
	}
	g.r.m.inflight.Inc()
	defer func() { <-g.r.sem; g.r.m.inflight.Dec() }()
	return rc.otlp.Export(ctx, req)
}
