package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"

	"github.com/mcplens/mcplens/chconn"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/retention"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/traffic"
)

// serve runs the HTTP receivers until ctx ends, then stops taking requests,
// flushes the queue with its own deadline and closes the connection.
func serve(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, _, err := parse("serve", args, getenv, stderr, func(fs *flag.FlagSet) {})
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	if limit, set, err := cfg.ops.heapLimit(getenv, cfg.batch.QueueCapacity, cfg.otlp.PairMaxBytes); err != nil {
		return err
	} else if set {
		debug.SetMemoryLimit(limit)
	}
	listen := cfg.listen
	proc, err := cfg.processor()
	if err != nil {
		return err
	}
	tokens, err := cfg.ops.tokens(log, map[string]string{"-listen": listen, "-grpc-listen": cfg.grpcListen})
	if err != nil {
		return err
	}
	psrv, pprofLis, err := listenPprof(cfg.pprofListen)
	if err != nil {
		return err
	}
	if psrv != nil {
		defer psrv.Close()
		go psrv.Serve(pprofLis) // ends with Close
	}

	conn, err := chconn.Open(ctx, cfg.ch, true)
	if err != nil {
		return err
	}
	defer conn.Close()
	applied, err := schema.ApplyCluster(ctx, conn, cfg.ch.Cluster)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		log.Info("migrations applied", "files", applied)
	}

	reg := newRegistry()
	m := pipeline.NewMetrics(reg)
	spool, err := pipeline.OpenSpool(cfg.ops.spool, m, log)
	if err != nil {
		return err
	}
	defer spool.Close() // after Drain; a no-op when the shutdown path closed it
	batcher := pipeline.NewSpooledBatcher(pipeline.NewWriter(conn, m), spool, cfg.batch, m, log)
	if proc.Tools, err = cfg.tools.open(ctx, conn, m, reg, log); err != nil { // before the receivers copy proc
		return err
	}
	recv := pipeline.NewReceivers(proc, batcher, m, pipeline.ReceiversConfig{HTTP: cfg.http, OTLP: cfg.otlp,
		Tokens: tokens, MaxConcurrent: cfg.ops.maxConcurrent}, log)
	if err := recv.OpenPairLogs(); err != nil { // the spans a crash left held
		return err
	}
	defer recv.ClosePairLogs() // a no-op when the shutdown path closed them
	mux := http.NewServeMux()
	mux.Handle("/v1/calls", recv.Calls())
	mux.Handle("/v1/traces", recv.Traces())
	if proc.Tools != nil {
		mux.Handle("/v1/tools", recv.Tools())
	}
	mux.Handle("/metrics", recv.Metrics(promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := conn.Ping(r.Context()); err != nil {
			http.Error(w, "clickhouse unreachable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	srv := &http.Server{Addr: listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	var grpcLis net.Listener
	if cfg.grpcListen != "" {
		if grpcLis, err = net.Listen("tcp", cfg.grpcListen); err != nil {
			return fmt.Errorf("grpc listen %s: %w", cfg.grpcListen, err)
		}
	}

	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); batcher.Run(runCtx) }()
	go func() { defer wg.Done(); recv.Run(runCtx) }()
	if proc.Tools != nil {
		wg.Add(1)
		go func() { defer wg.Done(); proc.Tools.Run(runCtx) }()
	}
	if cfg.ops.retentionEvery > 0 {
		rm := retention.NewMetrics(reg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			retention.Run(runCtx, conn, cfg.ops.retention, cfg.ops.retentionEvery, rm, log)
		}()
	}
	errc := make(chan error, 2)
	go func() { errc <- fmt.Errorf("listen %s: %w", listen, srv.ListenAndServe()) }()
	var gsrv *grpc.Server
	if grpcLis != nil {
		gsrv = recv.GRPCServer()
		go func() { errc <- fmt.Errorf("grpc serve %s: %w", cfg.grpcListen, gsrv.Serve(grpcLis)) }()
	}
	log.Info("ingest listening", "addr", listen, "grpc_addr", cfg.grpcListen, "pprof_addr", cfg.pprofListen, "clickhouse", cfg.ch.String(),
		"batch_size", cfg.batch.BatchSize, "queue_capacity", cfg.batch.QueueCapacity, "rules", cfg.rulesFile,
		"taxonomy", proc.Classifier.Version(), "spool_dir", cfg.ops.spool.Dir, "spool_fsync", cfg.ops.spool.Fsync,
		"spool_pending_bytes", spool.Bytes(), "max_concurrent_requests", cfg.ops.maxConcurrent, "memory_limit_bytes", debug.SetMemoryLimit(-1),
		"validate_schemas", proc.Tools != nil)

	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
	}
	start := time.Now()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.shutdownTimeout)
	defer cancel()
	// 1. Stop taking requests. In-flight requests get half of the deadline;
	// past it their connections are closed: they were not acknowledged, so
	// nothing accepted is lost, and the drain keeps its share of the time.
	httpCtx, cancelHTTP := context.WithTimeout(stopCtx, cfg.shutdownTimeout/2)
	if herr := srv.Shutdown(httpCtx); herr != nil {
		log.Warn("requests still running at the shutdown deadline; closing their connections unacknowledged", "err", herr)
		_ = srv.Close()
	}
	cancelHTTP()
	log.Info("http stopped", "took", time.Since(start).String())
	if gsrv != nil {
		stopGRPC(stopCtx, gsrv)
		log.Info("grpc stopped", "took", time.Since(start).String())
	}
	err = errors.Join(err, recv.Flush(stopCtx)) // spans still waiting for their other side
	log.Info("otlp pairs flushed", "took", time.Since(start).String(), "left", recv.Held())
	cancelRun()
	wg.Wait()
	err = errors.Join(err, recv.ClosePairLogs())             // the rows remembered, and what Flush left held, stay for the next start
	err = errors.Join(serveErr, err, batcher.Drain(stopCtx)) // 2. flush what is queued
	log.Info("queue drained", "took", time.Since(start).String(), "left", batcher.Queued())
	if proc.Tools != nil {
		err = errors.Join(err, proc.Tools.Drain(stopCtx)) // definitions and schema violations
		log.Info("tool rows drained", "took", time.Since(start).String(), "left", proc.Tools.Queued())
	}
	err = errors.Join(err, spool.Close()) // what was not inserted stays for the next start
	log.Info("spool closed", "took", time.Since(start).String(), "pending_bytes", spool.Bytes())
	return err // 3. the deferred conn.Close runs last
}

// stopGRPC waits for in-flight exports until ctx ends, then closes the
// remaining connections.
func stopGRPC(ctx context.Context, s *grpc.Server) {
	done := make(chan struct{})
	go func() { s.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.Stop()
		<-done
	}
}

// migrate applies the schema and reports what it did.
func migrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, _, err := parse("migrate", args, getenv, stderr, nil)
	if err != nil {
		return err
	}
	conn, err := chconn.Open(ctx, cfg.ch, true)
	if err != nil {
		return err
	}
	defer conn.Close()
	applied, err := schema.ApplyCluster(ctx, conn, cfg.ch.Cluster)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintf(stdout, "schema up to date (version %d) in %s\n", schema.Latest(), cfg.ch.String())
		return nil
	}
	for _, a := range applied {
		fmt.Fprintln(stdout, "applied", a)
	}
	return nil
}

// replay ingests a capture file (or stdin) through the same decoder,
// classifier and writer as the HTTP receiver, and waits until every call is
// inserted. With -fold it then folds, day by day, the copies that calls
// ingested before now have (compact.Days).
func replay(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stderr io.Writer) error {
	var fold bool
	cfg, fs, err := parse("replay", args, getenv, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&fold, "fold", false, "after the replay, merge each day it wrote into one part (OPTIMIZE ... FINAL), so that the copies of calls ingested before are gone now rather than after ClickHouse's merges; it rewrites each such day, so use it when replaying captures that were ingested already; each day's merge must end within -clickhouse-read-timeout (docs/analytics.md)")
	})
	if err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("replay needs one FILE argument, or - for stdin")
	}
	in := stdin
	name := fs.Arg(0)
	var size int64
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		in = f
	}
	proc, err := cfg.processor()
	if err != nil {
		return err
	}
	conn, err := chconn.Open(ctx, cfg.ch, true)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := schema.ApplyCluster(ctx, conn, cfg.ch.Cluster); err != nil {
		return err
	}
	m := pipeline.NewMetrics(prometheus.NewRegistry())
	w := pipeline.NewWriter(conn, m)
	if proc.Tools, err = cfg.tools.open(ctx, conn, m, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(stderr, nil))); err != nil {
		return err
	}
	prog := newProgress(stderr, size)
	counted := &countingReader{r: in}

	var calls []pipeline.Call
	var dead []pipeline.DeadLetter
	var accepted int
	days := map[uint32]bool{}
	var flushErr error
	flush := func() error {
		if err := w.WriteCalls(ctx, calls); err != nil {
			return err
		}
		if err := w.WriteDeadLetters(ctx, dead); err != nil {
			return err
		}
		calls, dead = calls[:0], dead[:0]
		if proc.Tools != nil {
			return proc.Tools.Flush(ctx) // definitions and violations of the calls just written
		}
		return nil
	}
	res, err := proc.ReadNDJSON(counted, cfg.defaultTenant, time.Now(),
		func(c pipeline.Call) {
			days[compact.DayOf(c.Time)] = true
			calls = append(calls, c)
			if len(calls) >= cfg.batch.BatchSize && flushErr == nil {
				flushErr = flush()
			}
			accepted++
			prog.update(counted.n, accepted)
		},
		func(d pipeline.DeadLetter) {
			dead = append(dead, d)
			fmt.Fprintf(stderr, "\nline %d rejected: %s\n", d.Line, d.Reason)
		})
	if err != nil {
		return fmt.Errorf("replay %s: %w", name, err)
	}
	if flushErr != nil {
		return fmt.Errorf("replay %s: %w", name, flushErr)
	}
	if err := flush(); err != nil {
		return fmt.Errorf("replay %s: %w", name, err)
	}
	prog.done(counted.n, res)
	if res.Accepted == 0 && res.Rejected > 0 {
		return fmt.Errorf("replay %s: every line was rejected", name)
	}
	if !fold {
		return nil
	}
	var db compact.DB = conn
	if cfg.ch.Cluster != "" {
		if db, err = compact.NewClustered(ctx, conn, cfg.ch.Cluster); err != nil {
			return fmt.Errorf("replay -fold: %w", err)
		}
	}
	if err := compact.Days(ctx, db, slices.Sorted(maps.Keys(days)), func(day uint32, took time.Duration) {
		fmt.Fprintf(stderr, "replay: folded partition %d (%.1f s)\n", day, took.Seconds())
	}); err != nil {
		return fmt.Errorf("replay %s: %w", name, err)
	}
	return nil
}

// sample writes generated traffic (package traffic) to stdout.
func sample(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ingest sample", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Int64("seed", 1, "random seed; the same seed gives the same traffic")
	sessions := fs.Int("sessions", 400, "number of sessions")
	hours := fs.Duration("duration", 3*time.Hour, "spread the sessions over this long, ending now (or at -end)")
	end := fs.String("end", "", "RFC 3339 end of the traffic (default: now)")
	toolsList := fs.Bool("tools-list", false, "first write one tools/list line per tenant and server (their tool definitions), so that ingest validates the calls against them (docs/schemas.md)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stop := time.Now().UTC()
	if *end != "" {
		t, err := time.Parse(time.RFC3339, *end)
		if err != nil {
			return fmt.Errorf("-end: %w", err)
		}
		stop = t
	}
	bw := bufio.NewWriterSize(stdout, 64<<10)
	write := func(line []byte) error {
		if _, err := bw.Write(line); err != nil {
			return err
		}
		return bw.WriteByte('\n')
	}
	cfg := traffic.Config{Seed: *seed, Start: stop.Add(-*hours), Duration: *hours, Sessions: *sessions}
	var err error
	if *toolsList {
		err = traffic.ToolsList(cfg, write)
	}
	if err == nil {
		err = traffic.Generate(cfg, write)
	}
	if err != nil {
		return fmt.Errorf("sample: %w", err)
	}
	return bw.Flush()
}

// rules validates a rules file: "ingest rules check FILE".
func rules(args []string, stdout io.Writer) error {
	if len(args) != 2 || args[0] != "check" {
		return fmt.Errorf("usage: ingest rules check FILE")
	}
	if err := classify.Check(args[1]); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok\n", args[1])
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// progress prints a one-line status to a terminal, and nothing otherwise.
type progress struct {
	w     io.Writer
	tty   bool
	size  int64
	start time.Time
	last  time.Time
}

func newProgress(w io.Writer, size int64) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progress{w: w, tty: tty, size: size, start: time.Now()}
}

func (p *progress) update(read int64, calls int) {
	if !p.tty || time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last = time.Now()
	pct := ""
	if p.size > 0 {
		pct = fmt.Sprintf(" %3.0f%%", 100*float64(read)/float64(p.size))
	}
	fmt.Fprintf(p.w, "\rreplay:%s %d calls, %.1f MB", pct, calls, float64(read)/1e6)
}

func (p *progress) done(read int64, r pipeline.Result) {
	if p.tty {
		fmt.Fprint(p.w, "\r")
	}
	fmt.Fprintf(p.w, "replay: %d accepted, %d skipped, %d rejected, %d tool lists (%.1f MB in %s)\n",
		r.Accepted, r.Skipped, r.Rejected, r.ToolLists, float64(read)/1e6, time.Since(p.start).Round(time.Millisecond))
}

// newRegistry returns the registry of ingest's /metrics with the Go and
// process collectors. Besides the Go collector's defaults it exports the
// runtime's estimate of the CPU the garbage collector takes
// (go_cpu_classes_gc_*_cpu_seconds_total, against
// go_cpu_classes_total_cpu_seconds_total) and the live heap, its goal and
// the soft limit (go_gc_heap_live_bytes, go_gc_heap_goal_bytes,
// go_gc_gomemlimit_bytes): what the pair memory and the queue cost the
// collector, and how close the heap runs to -memory-limit
// (docs/operations.md).
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.GoRuntimeMetricsRule{
			Matcher: regexp.MustCompile(`^/cpu/classes/(gc/.*|total):cpu-seconds$|^/gc/heap/(live|goal):bytes$|^/gc/gomemlimit:bytes$`),
		})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}
