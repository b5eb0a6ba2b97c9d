// Command ingestbench measures mcplens's ingest end to end against the
// machine's limit, in one run on one ClickHouse server (BENCHMARKS.md):
//
//   - ingest: realistic calls from the traffic generator, posted to a
//     running cmd/ingest (its default flags: spool with fsync always,
//     batches of 10,000) over loopback by several concurrent clients, as
//     NDJSON captures and as OTLP protobuf spans, gzip off and on (root
//     server spans; server spans with a parent, which ingest remembers for
//     pairing; and both sides of every call in separate requests, which
//     it merges into one row), timed until count() FROM calls holds all of
//     them (for both sides, every merged row); plus NDJSON with
//     -spool-fsync=never and with -batch-size=50000, to show what those
//     settings cost;
//   - the references: the same calls already normalized (Processor.Line),
//     inserted by clickhouse-client as JSONEachRow (what a user without
//     mcplens would do) and as Native (the machine's limit), into the same
//     schema;
//   - ingest's peak RSS (VmHWM) at a sustained, paced rate (NDJSON, and
//     the same rate with every call validated) and under overload.
//
// Each scenario runs -runs times, interleaved, into a fresh database; the
// table shows medians and ingest's rate as a ratio of each reference.
// With -cpuprofile it instead runs ingest in this process once, on NDJSON
// or on the payload -only names (-only otlp), and writes a CPU profile of
// the ingest path. The binary needs libchdb.so
// (CHDB_LIB_PATH, as the tests do) because it starts ClickHouse through
// chtest.
//
//	go run ./bench/ingestbench [-calls 300000] [-runs 3] [-clickhouse-addr host:port]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcplens/mcplens/chtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "ingestbench:", err)
		os.Exit(1)
	}
}

// config is the benchmark's configuration, from flags only.
type config struct {
	calls           int
	perBody         int
	posters         int
	runs            int
	chAddr          string
	ingestBin       string
	sustainedRate   float64
	overloadPosters int
	timeout         time.Duration
	cpuProfile      string
	memProfile      string
	keep            bool
	only            []string  // scenario name substrings to run; empty runs all
	variants        []variant // extra NDJSON runs
}

func parse(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("ingestbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.calls, "calls", 300000, "capture lines generated and sent in each run; more gives steadier rates at the cost of memory (about 3 KB per call here) and time")
	fs.IntVar(&c.perBody, "lines-per-request", 1000, "capture lines (or spans) per request body")
	fs.IntVar(&c.posters, "posters", 4, "concurrent clients posting to ingest")
	fs.IntVar(&c.runs, "runs", 3, "runs of each scenario, interleaved; the table shows medians")
	fs.StringVar(&c.chAddr, "clickhouse-addr", "", "native address of the ClickHouse server to use; empty starts a throwaway clickhouse-server (18.16 from PATH)")
	fs.StringVar(&c.ingestBin, "ingest-bin", "", "cmd/ingest binary; empty builds it")
	fs.Float64Var(&c.sustainedRate, "sustained-rate", 0, "calls/s of the paced run that measures peak RSS at a sustained rate; 0 is half the NDJSON rate just measured")
	fs.IntVar(&c.overloadPosters, "overload-posters", 32, "concurrent clients of the overload run, which resend every 503 after a short backoff")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "longest wait for the calls of one run to be queryable")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "run ingest in this process once and write a CPU profile of it here (nothing else runs); the scenario is NDJSON, or the first payload -only selects (ndjson, ndjson+gzip, ndjson+tools, otlp, otlp+gzip, otlp+tools, otlp-linked, otlp-both)")
	fs.StringVar(&c.memProfile, "memprofile", "", "with -cpuprofile, also write an allocation profile of the profiled run here")
	fs.BoolVar(&c.keep, "keep", false, "keep the work directory (data files, ingest logs)")
	only := fs.String("only", "", "comma-separated substrings of the scenario names to run (e.g. \"Native,NDJSON\"); \"memory\" selects the memory runs; empty runs everything")
	variants := fs.String("variants", "-spool-fsync=never;-batch-size=10000 -inserts=1", "extra NDJSON runs on top of the defaults, separated by ';', each a space-separated set of ingest flags; posters=N in a set changes -posters for that run, payload=otlp (or ndjson+gzip, ndjson+tools, otlp+gzip, otlp+tools, otlp-linked, otlp-both) posts that payload instead of NDJSON, bin=PATH runs another ingest binary (an older build, for before/after), sql=PATH runs the file's statements (';' at a line's end ends one) in the run's database after the schema (an older view, for a before/after of the server's side), and NAME=value (GOGC=200, GOMEMLIMIT=256MiB) goes to the ingest process's environment")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, o := range strings.Split(*only, ",") {
		if o = strings.TrimSpace(o); o != "" {
			c.only = append(c.only, o)
		}
	}
	for _, v := range strings.Split(*variants, ";") {
		if v = strings.TrimSpace(v); v != "" {
			pv, err := parseVariant(v)
			if err != nil {
				return nil, err
			}
			c.variants = append(c.variants, pv)
		}
	}
	if c.calls < 1 || c.perBody < 1 || c.posters < 1 || c.runs < 1 || c.overloadPosters < 1 {
		return nil, errors.New("-calls, -lines-per-request, -posters, -runs and -overload-posters must be positive")
	}
	return c, nil
}

// run is the whole benchmark; it touches no process globals but the
// profilers, so tests call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parse(args, stderr)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "mcplens-ingestbench-")
	if err != nil {
		return err
	}
	if cfg.keep {
		fmt.Fprintln(stderr, "work directory:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
	}

	if cfg.memProfile != "" {
		// Sample only the profiled run's allocations, not the data's.
		runtime.MemProfileRate = 0
	}
	logf("generating %d calls", cfg.calls)
	data, err := prepare(cfg.calls, cfg.perBody, dir)
	if err != nil {
		return err
	}
	logf("%d lines, %d calls, %.1f MB NDJSON (%d B/line), %.1f MB JSONEachRow", data.lines, data.calls,
		mb(data.ndjson), data.ndjson/int64(data.lines), mb(data.rowBytes))

	ch, err := startClickHouse(ctx, cfg.chAddr, dir+"/clickhouse")
	if err != nil {
		return err
	}
	defer ch.close()
	logf("ClickHouse %s on %s", ch.version, ch.addr)
	b := &bench{cfg: cfg, data: data, ch: ch, dir: dir, logf: logf}

	if cfg.cpuProfile != "" {
		return b.profile(ctx, stdout)
	}
	if b.bin = cfg.ingestBin; b.bin == "" {
		if b.bin, err = buildIngest(ctx, dir); err != nil {
			return err
		}
	}
	rep, err := b.all(ctx)
	if err != nil {
		return err
	}
	rep.write(stdout)
	return nil
}

// bench runs scenarios.
type bench struct {
	cfg    *config
	data   *dataset
	ch     *clickhouse
	dir    string
	bin    string
	native string // Native export of the normalized rows, made by the first JSONEachRow run
	logf   func(string, ...any)
}

// all runs every scenario cfg.runs times, round-robin, then the two memory
// runs.
func (b *bench) all(ctx context.Context) (*report, error) {
	rep := &report{cfg: b.cfg, data: b.data, ch: b.ch, load: loadAvg()}
	nd := b.data.payloads[0]
	type scenario struct {
		name string
		run  func(context.Context) (result, error)
	}
	scenarios := []scenario{
		{nameJSON, b.clientJSON}, {nameNative, b.clientNative}, {nameNativeNoView, b.clientNativeNoRollup},
	}
	for _, p := range b.data.payloads {
		scenarios = append(scenarios, scenario{scenarioName(p), b.ingestRun(p, variant{})})
	}
	for _, v := range b.cfg.variants {
		p := nd
		for _, q := range b.data.payloads {
			if q.name == v.payload {
				p = q
			}
		}
		scenarios = append(scenarios, scenario{scenarioName(p) + ", " + v.label, b.ingestRun(p, v)})
	}
	for r := 1; r <= b.cfg.runs; r++ {
		for _, s := range scenarios {
			if !b.cfg.selected(s.name) {
				continue
			}
			if s.name == nameNative && b.native == "" && !b.cfg.selected(nameJSON) {
				return nil, fmt.Errorf("-only: %q needs %q (its first run makes the Native file)", nameNative, nameJSON)
			}
			res, err := s.run(ctx)
			if err != nil {
				return nil, err
			}
			res.run = r
			b.logf("run %d %-40s %8.0f calls/s  %6.2f s (answered %.2f s)  server CPU %5.2f s  ingest CPU %5.2f s  push-backs %d  peak RSS %.0f MB  %s",
				r, res.scenario, res.rate(), res.elapsed.Seconds(), res.posted.Seconds(), res.serverCPU.Seconds(), res.ingestCPU.Seconds(), res.pushBack, mb(res.peakRSS), res.metrics)
			if res.twice > 0 {
				b.logf("run %d %s: %d calls stored as two rows", r, res.scenario, res.twice)
			}
			if res.violations > 0 {
				b.logf("run %d %s: %d call_violations rows, %d calls rows with args_validated", r, res.scenario, res.violations, res.validated)
			}
			rep.runs = append(rep.runs, res)
		}
	}
	if !b.cfg.selected("memory") {
		return rep, nil
	}
	rate := b.cfg.sustainedRate
	if rate == 0 {
		rate = rep.median(scenarioName(b.data.payloads[0])).rate() / 2
		if rate == 0 {
			return nil, errors.New("the memory runs need -sustained-rate, or the NDJSON scenario selected by -only")
		}
	}
	for _, m := range []struct {
		name string
		v    variant
	}{
		{fmt.Sprintf("sustained: %.0f calls/s paced, %d posters", rate, b.cfg.posters), variant{rate: rate}},
		{fmt.Sprintf("sustained, every call validated (ndjson+tools): %.0f calls/s paced, %d posters", rate, b.cfg.posters),
			variant{rate: rate, payload: "ndjson+tools"}},
		{fmt.Sprintf("overload: %d posters, unpaced", b.cfg.overloadPosters), variant{posters: b.cfg.overloadPosters}},
		{fmt.Sprintf("overload: %d posters, unpaced, -batch-size=20000 -queue-capacity=40000", b.cfg.overloadPosters),
			variant{posters: b.cfg.overloadPosters, flags: []string{"-batch-size=20000", "-queue-capacity=40000"}}},
		{fmt.Sprintf("overload: %d posters, unpaced, -memory-limit=off", b.cfg.overloadPosters),
			variant{posters: b.cfg.overloadPosters, flags: []string{"-memory-limit=off"}}},
	} {
		p := b.data.payloads[0]
		for _, q := range b.data.payloads {
			if q.name == m.v.payload {
				p = q
			}
		}
		res, err := b.ingest(ctx, p, m.v)
		if err != nil {
			return nil, err
		}
		res.scenario = m.name
		b.logf("%-60s %8.0f calls/s  push-backs %d  peak RSS %.0f MB  %s", m.name, res.rate(), res.pushBack, mb(res.peakRSS), res.metrics)
		rep.memory = append(rep.memory, res)
	}
	return rep, nil
}

// selected reports whether -only selects the scenario called name.
func (c *config) selected(name string) bool {
	if len(c.only) == 0 {
		return true
	}
	for _, o := range c.only {
		if strings.Contains(strings.ToLower(name), strings.ToLower(o)) {
			return true
		}
	}
	return false
}

// Scenario names, as the report prints them.
const (
	nameJSON         = "clickhouse-client JSONEachRow"
	nameNative       = "clickhouse-client Native"
	nameNativeNoView = "clickhouse-client Native, no rollup view"
)

func scenarioName(p *payload) string { return "ingest " + p.name }

// result is one run of one scenario.
type result struct {
	posted    time.Duration // from the first request until the last was answered
	scenario  string
	run       int
	calls     int
	wire, raw int64 // bytes sent, and before compression
	elapsed   time.Duration
	pushBack  int64
	peakRSS   int64
	ingestCPU time.Duration
	serverCPU time.Duration
	clientCPU time.Duration
	// group is the scenario's name without its bin= and sql= entries, and
	// bin the build: the ingest binary's file name, and " sql=" and the
	// file's name when a sql= file changed the schema. Runs of one group
	// with different builds are compared run by run (report.writePairs).
	group, bin string
	metrics    ingestMetrics
	twice      int // calls stored as two rows (both sides, the first forgotten before the second came)
	// violations are the call_violations rows the run wrote (a payload
	// with setup): counted once the calls are queryable and the rows have
	// stopped coming, after the timed run; validated the calls rows with
	// args_validated 1, counted then too (0 from a build older than schema
	// migration 024, which marked a passing call with a violation row).
	violations, validated uint64
}

func (r result) rate() float64 { return float64(r.calls) / r.elapsed.Seconds() }

// clientJSON inserts the normalized rows as JSONEachRow with
// clickhouse-client; the first run also exports them as Native for the
// Native references.
func (b *bench) clientJSON(ctx context.Context) (result, error) {
	res, db, err := b.client(ctx, nameJSON, "calls", "JSONEachRow", b.data.jsonRows, b.data.rowBytes)
	if err != nil {
		return res, err
	}
	defer b.ch.dropDatabase(ctx, db)
	if b.native == "" {
		b.native = b.dir + "/calls.native"
		if _, err := b.ch.client(ctx, db, "SELECT "+callColumns()+" FROM calls FORMAT Native", "", b.native); err != nil {
			return res, err
		}
	}
	return res, nil
}

func (b *bench) clientNative(ctx context.Context) (result, error) {
	res, db, err := b.client(ctx, nameNative, "calls", "Native", b.native, fileSize(b.native))
	b.ch.dropDatabase(ctx, db)
	return res, err
}

// clientNativeNoRollup inserts Native into a copy of calls without the
// materialized view that feeds calls_5m: the cost of the table alone.
func (b *bench) clientNativeNoRollup(ctx context.Context) (result, error) {
	res, db, err := b.client(ctx, nameNativeNoView, "calls_copy", "Native", b.native, fileSize(b.native))
	b.ch.dropDatabase(ctx, db)
	return res, err
}

// client times clickhouse-client inserting file in format into a fresh
// database's table; the rows are queryable when the client exits.
func (b *bench) client(ctx context.Context, name, table, format, file string, size int64) (result, string, error) {
	db, err := b.ch.newDatabase(ctx, "client")
	if err != nil {
		return result{}, "", err
	}
	if table != "calls" {
		if err := b.ch.admin.Exec(b.ch.ddl(ctx), "CREATE TABLE "+db+"."+table+" AS "+db+".calls"); err != nil {
			return result{}, db, fmt.Errorf("create %s: %w", table, err)
		}
	}
	server0 := chtest.ProcessCPU(b.ch.pid)
	start := time.Now()
	clientCPU, err := b.ch.client(ctx, db, "INSERT INTO "+table+" ("+callColumns()+") FORMAT "+format, file, "")
	if err != nil {
		return result{}, db, err
	}
	res := result{scenario: name, calls: b.data.calls, wire: size, raw: size, elapsed: time.Since(start),
		serverCPU: chtest.ProcessCPU(b.ch.pid) - server0, clientCPU: clientCPU}
	return res, db, b.checkRows(ctx, db, table)
}

// checkRows checks that db.table holds each call exactly once.
func (b *bench) checkRows(ctx context.Context, db, table string) error {
	n, err := b.ch.countOf(ctx, "SELECT count() AS n FROM "+db+"."+table+" FINAL")
	if err != nil {
		return err
	}
	if n != uint64(b.data.calls) {
		return fmt.Errorf("%s.%s holds %d calls, want %d", db, table, n, b.data.calls)
	}
	return nil
}

// variant is how one ingest run differs from the defaults: posters (0:
// -posters), a pace in calls/s (0: unpaced), another ingest binary ("":
// the one built from the tree), ingest flags and environment entries;
// label names it in the report.
type variant struct {
	posters int
	rate    float64
	payload string // name of the payload posted; "" is NDJSON
	bin     string
	sql     string // file of statements run in the run's database after the schema
	flags   []string
	env     []string
	label   string
	same    string // label without the bin= entry
}

// payloadNames are the payloads prepare makes, for payload=NAME.
var payloadNames = []string{"ndjson", "ndjson+gzip", "ndjson+tools", "otlp", "otlp+gzip", "otlp+tools", "otlp-linked", "otlp-both"}

// parseVariant reads one -variants entry: space-separated ingest flags,
// with posters=N, payload=NAME, bin=PATH, sql=PATH and NAME=value
// (environment) entries. bin= and sql= name the build compared (the
// ingest binary, and statements that change the run's schema) and are left
// out of same.
func parseVariant(s string) (variant, error) {
	var v variant
	var label, same []string
	for _, f := range strings.Fields(s) {
		switch k, val, _ := strings.Cut(f, "="); {
		case k == "payload":
			if !slices.Contains(payloadNames, val) {
				return variant{}, fmt.Errorf("-variants %q: payload=NAME needs one of %s", s, strings.Join(payloadNames, ", "))
			}
			v.payload = val
			continue // the scenario's name says it
		case k == "posters":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return variant{}, fmt.Errorf("-variants %q: posters=N needs a positive N", s)
			}
			v.posters = n
		case k == "bin":
			v.bin = val
			label = append(label, filepath.Base(val))
			continue
		case k == "sql":
			v.sql = val
			label = append(label, "sql="+filepath.Base(val))
			continue
		case !strings.HasPrefix(f, "-") && strings.Contains(f, "=") && strings.ToUpper(k) == k:
			v.env = append(v.env, f)
		default:
			v.flags = append(v.flags, f)
		}
		label = append(label, f)
		same = append(same, f)
	}
	v.label, v.same = strings.Join(label, " "), strings.Join(same, " ")
	return v, nil
}

// ingestRun is the throughput scenario of one payload with variant v.
func (b *bench) ingestRun(p *payload, v variant) func(context.Context) (result, error) {
	return func(ctx context.Context) (result, error) {
		return b.ingest(ctx, p, v)
	}
}

// ingest starts a fresh ingest process as v says, on a fresh database and
// in a fresh directory, posts p, and times it from the first request until
// count() FROM calls holds every accepted call.
func (b *bench) ingest(ctx context.Context, p *payload, v variant) (result, error) {
	db, err := b.ch.newDatabase(ctx, "ingest")
	if err != nil {
		return result{}, err
	}
	defer b.ch.dropDatabase(ctx, db)
	if v.sql != "" {
		if err := b.ch.runFile(ctx, db, v.sql); err != nil {
			return result{}, err
		}
	}
	name := scenarioName(p)
	if v.label != "" {
		name += ", " + v.label
	}
	bin, posters := v.bin, v.posters
	if bin == "" {
		bin = b.bin
	}
	if posters == 0 {
		posters = b.cfg.posters
	}
	dir := filepath.Join(b.dir, db)
	in, err := startIngestProcess(ctx, bin, b.ch.addr, db, dir, v.flags, v.env)
	if err != nil {
		return result{}, err
	}
	if !b.cfg.keep {
		defer os.RemoveAll(dir) // the spool and the log
	}
	res := result{scenario: name, wire: p.wireBytes, raw: p.rawBytes, group: scenarioName(p), bin: filepath.Base(bin)}
	if v.sql != "" {
		res.bin += " sql=" + filepath.Base(v.sql)
	}
	if v.same != "" {
		res.group += ", " + v.same
	}
	err = b.drive(ctx, in, db, p, posters, v.rate, &res)
	if err == nil {
		res.metrics, err = scrapeMetrics(in.addr)
	}
	res.peakRSS = peakRSS(in.pid)
	res.ingestCPU = chtest.ProcessCPU(in.pid)
	if serr := in.stop(); err == nil && serr != nil {
		err = fmt.Errorf("stop ingest: %w", serr)
	}
	return res, err
}

// drive posts p to in and waits until db holds the accepted calls.
func (b *bench) drive(ctx context.Context, in *ingest, db string, p *payload, posters int, rate float64, res *result) error {
	if p.setup != nil {
		if err := postSetup(ctx, in.addr, p); err != nil {
			return err
		}
	}
	server0 := chtest.ProcessCPU(b.ch.pid)
	start := time.Now()
	st, err := post(ctx, in.addr, p, posters, rate)
	if err != nil {
		return err
	}
	posted := time.Since(start)
	accepted := st.accepted
	var done time.Time
	if p.perCall > 1 {
		if accepted%int64(p.perCall) != 0 {
			return fmt.Errorf("%s: ingest accepted %d spans, not %d per call", p.name, accepted, p.perCall)
		}
		accepted /= int64(p.perCall)
		done, err = b.waitBuilt(ctx, in, db)
	} else {
		done, err = b.ch.waitCount(ctx, db, uint64(accepted), b.cfg.timeout)
	}
	if err != nil {
		return err
	}
	res.calls, res.pushBack, res.elapsed, res.posted = int(accepted), st.pushBack, done.Sub(start), posted
	res.serverCPU = chtest.ProcessCPU(b.ch.pid) - server0
	if accepted != int64(b.data.calls) {
		return fmt.Errorf("%s: ingest accepted %d calls, Processor.Line %d", p.name, accepted, b.data.calls)
	}
	if p.perCall > 1 {
		// A call whose first side the pairer forgot before the other came
		// is two rows: counted, not an error. Fewer rows is.
		n, err := b.ch.count(ctx, db, true)
		if err != nil {
			return err
		}
		if n < uint64(b.data.calls) {
			return fmt.Errorf("%s: calls FINAL holds %d rows for %d calls", p.name, n, b.data.calls)
		}
		res.twice = int(n) - b.data.calls
		return nil
	}
	if err := b.checkRows(ctx, db, "calls"); err != nil {
		return err
	}
	if p.setup != nil {
		n, err := b.ch.waitViolations(ctx, db, b.cfg.timeout)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		res.violations = n
		if res.validated, err = b.ch.countValidated(ctx, db); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	return nil
}

// waitBuilt polls ingest's /metrics every 20 ms until it holds no span for
// pairing and has inserted every row it built, and returns when it did. A
// payload of both sides ends with one merged row per call (two for a call
// whose first side was forgotten) plus rows of first sides that the merged
// rows replace, and ClickHouse's merges remove those while the run goes
// on, so no count of the table tells when it is done; an INSERT that
// returned is queryable.
func (b *bench) waitBuilt(ctx context.Context, in *ingest, db string) (time.Time, error) {
	deadline := time.Now().Add(b.cfg.timeout)
	for {
		m, err := scrapeMetrics(in.addr)
		if err != nil {
			return time.Time{}, err
		}
		if m.held == 0 && m.built > 0 && m.insertedSum >= m.built {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("ingest inserted %.0f of the %.0f rows it built into %s.calls (%.0f spans held) after %s", m.insertedSum, m.built, db, m.held, b.cfg.timeout)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// profiled is the payload the profile mode runs: the first whose scenario
// -only selects (NDJSON when -only is empty or selects none).
func (b *bench) profiled() *payload {
	if len(b.cfg.only) > 0 {
		for _, p := range b.data.payloads {
			if b.cfg.selected(scenarioName(p)) {
				return p
			}
		}
	}
	return b.data.payloads[0]
}

// profile runs ingest in this process once, on the payload -only selects
// (NDJSON by default), under the CPU profiler (and the allocation profiler
// with -memprofile).
func (b *bench) profile(ctx context.Context, stdout io.Writer) error {
	db, err := b.ch.newDatabase(ctx, "profile")
	if err != nil {
		return err
	}
	defer b.ch.dropDatabase(ctx, db)
	in, err := startIngestInProcess(ctx, b.ch.addr, db, b.dir)
	if err != nil {
		return err
	}
	f, err := os.Create(b.cfg.cpuProfile)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	if b.cfg.memProfile != "" {
		runtime.MemProfileRate = 512 << 10 // the default
	}
	p := b.profiled()
	res := result{scenario: "in-process " + scenarioName(p), wire: p.wireBytes, raw: p.rawBytes}
	err = b.drive(ctx, in, db, p, b.cfg.posters, 0, &res)
	pprof.StopCPUProfile()
	err = errors.Join(err, in.stop())
	if err != nil {
		return err
	}
	if b.cfg.memProfile != "" {
		mf, err := os.Create(b.cfg.memProfile)
		if err != nil {
			return err
		}
		defer mf.Close()
		if err := pprof.Lookup("allocs").WriteTo(mf, 0); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%s: %d calls in %.2f s (all answered after %.2f s), %.0f calls/s, server CPU %.2f s; CPU profile in %s\n",
		res.scenario, res.calls, res.elapsed.Seconds(), res.posted.Seconds(), res.rate(), res.serverCPU.Seconds(), b.cfg.cpuProfile)
	return nil
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func mb(n int64) float64 { return float64(n) / 1e6 }
