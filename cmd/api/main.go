// Command api serves the mcplens analytics over HTTP (see api/) and its
// Prometheus metrics on /metrics.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/mcplens/mcplens/api"
	"github.com/mcplens/mcplens/auth"
	"github.com/mcplens/mcplens/chconn"
	"github.com/mcplens/mcplens/gauges"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

type config struct {
	listen          string
	ch              chconn.Config
	queryTimeout    time.Duration
	queryMaxMemory  int64
	defaultWindow   time.Duration
	shutdownTimeout time.Duration
	gauges          gauges.Config
	tokensFile      string
	insecureOpen    bool
}

func run(ctx context.Context, args []string, getenv func(string) string, stderr *os.File) error {
	var cfg config
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.listen, "listen", envOr(getenv, "MCPLENS_API_LISTEN", "127.0.0.1:8080"), "HTTP listen address (env MCPLENS_API_LISTEN)")
	fs.DurationVar(&cfg.queryTimeout, "query-timeout", 30*time.Second, "deadline of one analytics query; longer ranges need more")
	fs.Int64Var(&cfg.queryMaxMemory, "query-max-memory", 4<<30, "bytes one analytics query may use on the ClickHouse server (max_memory_usage); past it the request gets 503 and a hint to narrow the range; 0 = the server profile's limit")
	fs.DurationVar(&cfg.defaultWindow, "default-window", 24*time.Hour, "range used when a request gives no from/to")
	fs.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long in-flight requests may finish on SIGTERM")
	fs.DurationVar(&cfg.gauges.Every, "gauges-every", time.Minute, "how often the analytics gauges on /metrics are refreshed from ClickHouse; each refresh runs up to 3 queries, and 4 per (tenant, server) pair")
	fs.DurationVar(&cfg.gauges.Window, "gauges-window", time.Hour, "trailing window the mcplens_window_* gauges describe; longer windows cost more per refresh")
	fs.IntVar(&cfg.gauges.MaxSeries, "gauges-max-series", 5000, "most series per gauge metric, busiest first; the rest are counted in mcplens_gauges_series_dropped_total")
	fs.IntVar(&cfg.gauges.MaxPairs, "gauges-max-pairs", 50, "most (tenant, server) pairs whose retry, re-call and misclassification gauges are exported, most failures first")
	fs.StringVar(&cfg.tokensFile, "tokens-file", getenv("MCPLENS_TOKENS_FILE"), "YAML or JSON file of bearer tokens (docs/operations.md); api tokens read only their tenants, metrics tokens read /metrics; without tokens (and without MCPLENS_TOKENS) the api runs in open mode (env MCPLENS_TOKENS_FILE)")
	fs.BoolVar(&cfg.insecureOpen, "insecure-open", false, "allow open mode (no tokens) on a non-loopback -listen")
	cfg.ch.RegisterFlags(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	tokens, err := auth.Load(cfg.tokensFile, getenv("MCPLENS_TOKENS"))
	if err != nil {
		return err
	}
	if tokens.Len() == 0 {
		if err := auth.CheckOpenListen("-listen", cfg.listen, cfg.insecureOpen); err != nil {
			return err
		}
		log.Warn("open mode: no tokens configured, every request may read every tenant; configure -tokens-file for anything but a loopback setup",
			"insecure_open", cfg.insecureOpen)
	}
	conn, err := chconn.Open(ctx, cfg.ch, false)
	if err != nil {
		return err
	}
	defer conn.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	e := api.New(conn, reg, log, api.Config{QueryTimeout: cfg.queryTimeout, DefaultWindow: cfg.defaultWindow, MaxQueryMemory: cfg.queryMaxMemory,
		Tokens: tokens})
	cfg.gauges.QueryTimeout = cfg.queryTimeout
	exporter := gauges.New(conn, reg, log, cfg.gauges)
	gaugeCtx, stopGauges := context.WithCancel(ctx)
	gaugesDone := make(chan struct{})
	go func() { exporter.Run(gaugeCtx); close(gaugesDone) }()
	defer func() { stopGauges(); <-gaugesDone }() // before conn.Close
	srv := &http.Server{Addr: cfg.listen, Handler: e, ReadHeaderTimeout: 10 * time.Second}
	log.Info("api listening", "addr", cfg.listen, "clickhouse", cfg.ch.String())

	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return fmt.Errorf("listen %s: %w", cfg.listen, err)
	case <-ctx.Done():
	}
	start := time.Now()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.shutdownTimeout)
	defer cancel()
	err = srv.Shutdown(stopCtx)
	log.Info("api stopped", "took", time.Since(start).String())
	return err
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}
