package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/mcplens/mcplens/chconn"
	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
)

// ingest is a running ingest server: the cmd/ingest binary as a process,
// or the same receivers, batcher and writer in this process (-cpuprofile).
type ingest struct {
	addr string
	pid  int // 0 in-process
	stop func() error
}

// startIngestProcess starts bin serve against db on ch with cmd/ingest's
// defaults, gRPC off, plus flags and the environment entries env, in dir (so that its spool, -spool-dir
// "spool" by default, is new), and waits until /healthz answers. Its log
// goes to dir/ingest.log.
func startIngestProcess(ctx context.Context, bin, chAddr, db, dir string, flags, env []string) (*ingest, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "ingest.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "-listen", addr, "-grpc-listen=",
		"-clickhouse-addr", chAddr, "-clickhouse-database", db}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	in := &ingest{addr: addr, pid: cmd.Process.Pid, stop: func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			return err
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			return fmt.Errorf("ingest did not stop within 60s after SIGTERM; killed (log %s)", logPath)
		}
	}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("ingest exited during start (%v); log %s:\n%s", err, logPath, tail(logPath))
		default:
		}
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return in, nil
			}
		}
		if time.Now().After(deadline) {
			_ = in.stop()
			return nil, fmt.Errorf("ingest not healthy on %s after 30s: %v; log %s", addr, err, logPath)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startIngestInProcess serves the ingest receivers from this process, wired
// as cmd/ingest wires them with its default flags (a spool in dir with
// fsync always, open mode), so that a CPU profile of this process shows the
// ingest path.
func startIngestInProcess(ctx context.Context, chAddr, db, dir string) (*ingest, error) {
	conn, err := chconn.Open(ctx, chconn.Config{Addr: chAddr, Database: db, User: "default",
		DialTimeout: 5 * time.Second, ReadTimeout: 60 * time.Second}, true)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	m := pipeline.NewMetrics(reg)
	spool, err := pipeline.OpenSpool(pipeline.SpoolConfig{Dir: filepath.Join(dir, "spool"), Fsync: pipeline.FsyncAlways,
		MaxBytes: 1 << 30}, m, log)
	if err != nil {
		conn.Close()
		return nil, err
	}
	batcher := pipeline.NewSpooledBatcher(pipeline.NewWriter(conn, m), spool,
		pipeline.BatchConfig{BatchSize: 100000, FlushEvery: time.Second, FlushIdle: 100 * time.Millisecond, QueueCapacity: 300000, Inserts: 2}, m, log)
	// Schema validation on, as cmd/ingest's default: the tools/list lines
	// of a payload's setup teach it the definitions.
	proc := newProcessor()
	proc.Tools = pipeline.NewTools(pipeline.NewWriter(conn, m), conn, pipeline.ToolsConfig{}, reg, log)
	if err := proc.Tools.Load(ctx); err != nil {
		spool.Close()
		conn.Close()
		return nil, err
	}
	recv := pipeline.NewReceivers(proc, batcher, m, pipeline.ReceiversConfig{
		HTTP: pipeline.HTTPConfig{MaxBodyBytes: 16 << 20, MaxDecompressedBytes: 128 << 20}}, log)
	if err := recv.OpenPairLogs(); err != nil {
		spool.Close()
		conn.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/calls", recv.Calls())
	mux.Handle("/v1/traces", recv.Traces())
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		recv.ClosePairLogs()
		spool.Close()
		conn.Close()
		return nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); proc.Tools.Run(runCtx) }()
	go func() { defer wg.Done(); _ = srv.Serve(l) }()
	go func() { defer wg.Done(); _ = batcher.Run(runCtx) }()
	go func() { defer wg.Done(); recv.Run(runCtx) }()
	return &ingest{addr: l.Addr().String(), stop: func() error {
		stopCtx, done := context.WithTimeout(context.Background(), 60*time.Second)
		defer done()
		err := srv.Shutdown(stopCtx)
		err = errors.Join(err, recv.Flush(stopCtx))
		cancel()
		wg.Wait()
		err = errors.Join(err, recv.ClosePairLogs(), batcher.Drain(stopCtx), proc.Tools.Drain(stopCtx), spool.Close())
		conn.Close()
		return err
	}}, nil
}

// cleanEnv is this process's environment without the variables that
// configure ingest, so that only the flags given apply.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "MCPLENS_") || strings.HasPrefix(kv, "CLICKHOUSE_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// freeAddr returns a loopback address for the ingest binary, outside the
// kernel's ephemeral range (chtest.FreePorts).
func freeAddr() (string, error) {
	ports, err := chtest.FreePorts(1)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// postStats sums the answers to one run's requests.
type postStats struct {
	accepted int64 // calls (spans, for OTLP) ingest accepted
	pushBack int64 // 503 and 429 answers, each followed by a resend
}

// post sends every body of p to ingest with posters concurrent clients,
// each waiting for its answer before sending the next body. With rate > 0
// bodies start no faster than rate calls per second (an open-loop load);
// with 0 as fast as answers come. A body answered 503 or 429 is resent
// after a backoff of 50 ms doubling to 1 s (ingest's Retry-After is meant
// for real clients; a benchmark at saturation keeps the pressure on).
func post(ctx context.Context, addr string, p *payload, posters int, rate float64) (postStats, error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: posters, DisableCompression: true}}
	defer client.CloseIdleConnections()
	url := "http://" + addr + p.path
	work := make(chan int)
	var st postStats
	var firstErr error
	var once sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := func(err error) { once.Do(func() { firstErr = err; cancel() }) }
	var wg sync.WaitGroup
	for range posters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				n, retries, err := postOne(ctx, client, url, p, i)
				atomic.AddInt64(&st.accepted, int64(n))
				atomic.AddInt64(&st.pushBack, int64(retries))
				if err != nil {
					fail(fmt.Errorf("body %d of %s: %w", i, p.name, err))
				}
			}
		}()
	}
	start := time.Now()
	sent := 0
feed:
	for i := range p.bodies {
		if rate > 0 {
			at := start.Add(time.Duration(float64(sent) / float64(max(1, p.perCall)) / rate * float64(time.Second)))
			select {
			case <-ctx.Done():
				break feed
			case <-time.After(time.Until(at)):
			}
		}
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
		sent += p.calls[i]
	}
	close(work)
	wg.Wait()
	return st, firstErr
}

// postSetup posts p's setup body once (the tools/list capture lines of a
// payload that validates its calls, to /v1/calls whatever p's own path)
// and fails unless ingest takes it.
func postSetup(ctx context.Context, addr string, p *payload) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/calls", bytes.NewReader(p.setup))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("setup of %s: %w", p.name, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("setup of %s: %w", p.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("setup of %s: %s: %s", p.name, resp.Status, bytes.TrimSpace(body[:min(len(body), 500)]))
	}
	return nil
}

// postOne sends body i until it is taken, and returns the calls accepted
// and the push-backs answered on the way.
func postOne(ctx context.Context, client *http.Client, url string, p *payload, i int) (accepted, retries int, err error) {
	backoff := 50 * time.Millisecond
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(p.bodies[i]))
		if err != nil {
			return 0, retries, err
		}
		req.Header.Set("Content-Type", p.contentType)
		if p.gzip {
			req.Header.Set("Content-Encoding", "gzip")
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, retries, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, retries, err
		}
		switch resp.StatusCode {
		case http.StatusOK:
			n, err := acceptedIn(p, i, body)
			return n, retries, err
		case http.StatusServiceUnavailable, http.StatusTooManyRequests:
			retries++
			select {
			case <-ctx.Done():
				return 0, retries, ctx.Err()
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
		default:
			return 0, retries, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(body[:min(len(body), 500)]))
		}
	}
}

// acceptedIn reads the calls accepted from ingest's answer to body i.
func acceptedIn(p *payload, i int, body []byte) (int, error) {
	if p.path == "/v1/traces" {
		resp := ptraceotlp.NewExportResponse()
		if err := resp.UnmarshalProto(body); err != nil {
			return 0, fmt.Errorf("OTLP response: %w", err)
		}
		return p.calls[i] - int(resp.PartialSuccess().RejectedSpans()), nil
	}
	var res pipeline.Result
	if err := json.Unmarshal(body, &res); err != nil {
		return 0, fmt.Errorf("ingest response %q: %w", body, err)
	}
	return res.Accepted, nil
}

// buildIngest builds cmd/ingest into dir and returns the binary's path.
func buildIngest(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "ingest")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/mcplens/mcplens/cmd/ingest").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build cmd/ingest (run inside the mcplens module, or pass -ingest-bin): %w\n%s", err, out)
	}
	return bin, nil
}

// ingestMetrics are the counters of ingest's /metrics that explain a run.
type ingestMetrics struct {
	inserts     float64 // INSERTs into calls
	insertedSum float64 // rows in them
	insertSecs  float64 // time spent in them
	fsyncs      float64 // spool fsyncs
	fsyncSecs   float64
	spilled     float64 // calls that went to the spool only, the memory queue being full
	built       float64 // rows built (mcplens_ingest_calls_classified_total, every category)
	held        float64 // spans the OTLP pairer holds for their other side
	mergedHeld  float64 // sides merged while held
	mergedLate  float64 // sides merged onto a remembered row
	forgotEarly float64 // remembered rows forgotten for -otlp-pair-capacity or -otlp-pair-max-bytes
	gcSecs      float64 // the Go runtime's estimate of the garbage collector's CPU
}

func (m ingestMetrics) String() string {
	if m.inserts == 0 {
		return ""
	}
	s := fmt.Sprintf("%.0f inserts of %.0f rows (%.0f ms each), %.0f fsyncs (%.1f ms each), %.0f calls spilled",
		m.inserts, m.insertedSum/m.inserts, 1000*m.insertSecs/m.inserts, m.fsyncs, 1000*m.fsyncSecs/max(m.fsyncs, 1), m.spilled)
	if m.gcSecs > 0 {
		s += fmt.Sprintf(", the collector %.2f s of CPU", m.gcSecs)
	}
	if m.mergedHeld+m.mergedLate+m.forgotEarly > 0 {
		s += fmt.Sprintf(", pairs merged %.0f held and %.0f late, %.0f remembered rows forgotten early", m.mergedHeld, m.mergedLate, m.forgotEarly)
	}
	return s
}

// scrapeMetrics reads ingest's /metrics.
func scrapeMetrics(addr string) (ingestMetrics, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ingestMetrics{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return ingestMetrics{}, err
	}
	var m ingestMetrics
	for _, l := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(l, " ")
		if !ok || strings.HasPrefix(l, "#") {
			continue
		}
		var v float64
		fmt.Sscan(rest, &v)
		switch name {
		case "mcplens_ingest_batch_rows_count":
			m.inserts = v
		case "mcplens_ingest_batch_rows_sum":
			m.insertedSum = v
		case `mcplens_ingest_insert_duration_seconds_sum{table="calls"}`:
			m.insertSecs = v
		case "mcplens_ingest_spool_fsync_duration_seconds_count":
			m.fsyncs = v
		case "mcplens_ingest_spool_fsync_duration_seconds_sum":
			m.fsyncSecs = v
		case "mcplens_ingest_spool_spilled_calls_total":
			m.spilled = v
		case `mcplens_ingest_otlp_pair_entries{state="held"}`:
			m.held = v
		case `mcplens_ingest_otlp_pairs_merged_total{when="held"}`:
			m.mergedHeld = v
		case `mcplens_ingest_otlp_pairs_merged_total{when="late"}`:
			m.mergedLate = v
		case `mcplens_ingest_otlp_pair_forgotten_total{reason="capacity"}`, `mcplens_ingest_otlp_pair_forgotten_total{reason="bytes"}`:
			m.forgotEarly += v
		case "go_cpu_classes_gc_total_cpu_seconds_total":
			m.gcSecs = v
		}
		if strings.HasPrefix(name, "mcplens_ingest_calls_classified_total{") {
			m.built += v
		}
	}
	return m, nil
}
