// Package api serves the mcplens analytics over HTTP with echo: one handler
// per question in queries/, all under the same contract — query parameters
// from, to (RFC 3339 or unix seconds; default the last 24 h), tenant, server,
// tool; a JSON body {"from","to","rows":[...]}; HTTP 400 {"error":"..."} on a
// bad parameter. Handlers return errors; one function maps them to statuses.
package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcplens/mcplens/auth"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/schema"
)

// Config tunes the API.
type Config struct {
	DefaultWindow time.Duration // range when from/to are absent (-default-window)
	MaxBuckets    int           // largest (to-from)/step a request may ask for
	QueryTimeout  time.Duration // per-request ClickHouse deadline (-query-timeout)
	// MaxQueryMemory caps one query's memory on the server (max_memory_usage;
	// -query-max-memory); 0 leaves the server's profile in charge.
	MaxQueryMemory int64
	Now            func() time.Time
	// Tokens, when set, guards every route but /healthz, /readyz and the
	// OpenAPI document, and scopes api tokens to their tenants (auth.go);
	// nil is open mode.
	Tokens *auth.Tokens
}

// Server holds the handlers' dependencies.
type Server struct {
	db  queries.DB
	cfg Config
	log *slog.Logger
	m   *metrics
}

type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	denied   *prometheus.CounterVec
}

// New returns the echo instance serving the API, /healthz, /readyz and
// /metrics (the metrics of reg, on which it registers its own).
func New(db queries.DB, reg *prometheus.Registry, log *slog.Logger, cfg Config) *echo.Echo {
	if cfg.DefaultWindow <= 0 {
		cfg.DefaultWindow = 24 * time.Hour
	}
	if cfg.MaxBuckets <= 0 {
		cfg.MaxBuckets = 10000
	}
	if cfg.QueryTimeout <= 0 {
		cfg.QueryTimeout = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	f := promauto.With(reg)
	s := &Server{db: scopedDB{db}, cfg: cfg, log: log, m: &metrics{
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_api_requests_total",
			Help: "API requests by route and HTTP status code.",
		}, []string{"route", "code"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcplens_api_request_duration_seconds",
			Help:    "API request latency by route.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}, []string{"route"}),
		denied: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_api_denied_total",
			Help: "Requests refused by access control, by reason (unauthenticated, wrong_role, tenant).",
		}, []string{"reason"}),
	}}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(s.observe, s.authenticate)
	e.GET("/healthz", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]string{"status": "ok"}) })
	e.GET("/readyz", s.ready)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})))
	s.routes(e.Group("/api/v1"))
	return e
}

// errBadRequest marks parameter errors: HTTP 400 with the message.
var errBadRequest = errors.New("bad request")

type badRequest struct{ msg string }

func (b *badRequest) Error() string { return b.msg }
func (b *badRequest) Unwrap() error { return errBadRequest }

func badParam(format string, args ...any) error {
	return &badRequest{msg: sprintf(format, args...)}
}

func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status := http.StatusInternalServerError
	msg := "internal error; see the api log"
	var he *echo.HTTPError
	switch {
	case errors.As(err, &he):
		status = he.Code
		msg = http.StatusText(status)
		if m, ok := he.Message.(string); ok {
			msg = m
		}
	case errors.Is(err, errBadRequest):
		status, msg = http.StatusBadRequest, err.Error()
	case errors.Is(err, context.DeadlineExceeded), exceptionCode(err) == 159:
		status, msg = http.StatusServiceUnavailable, "query timed out; narrow the range or raise -query-timeout"
	case exceptionCode(err) == 241:
		status, msg = http.StatusServiceUnavailable, "query needs more memory than -query-max-memory allows; narrow the range or filters, or raise the limit"
	}
	if status >= 500 {
		s.log.Error("api request failed", "path", c.Path(), "status", status, "err", err)
	}
	_ = c.JSON(status, map[string]string{"error": msg})
}

// exceptionCode returns the ClickHouse server exception code in err, or 0.
func exceptionCode(err error) int32 {
	var ex *clickhouse.Exception
	if errors.As(err, &ex) {
		return ex.Code
	}
	return 0
}

func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		s.m.requests.WithLabelValues(route, strconv.Itoa(c.Response().Status)).Inc()
		s.m.duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
		return nil
	}
}

func (s *Server) ready(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 5*time.Second)
	defer cancel()
	if err := schema.Ready(ctx, s.db); err != nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "not ready", "error": err.Error()})
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

// Response is the body of every analytics endpoint.
type Response[T any] struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	Rows []T       `json:"rows"`
}

func respond[T any](c echo.Context, f queries.Filter, rows []T) error {
	if rows == nil {
		rows = []T{}
	}
	return c.JSON(http.StatusOK, Response[T]{From: f.From.UTC(), To: f.To.UTC(), Rows: rows})
}
