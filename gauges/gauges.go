// Package gauges exports the mcplens analytics as Prometheus metrics: calls,
// misflagged calls, retry chains, unchanged re-calls and misclassifications
// of a trailing window as gauges per tenant, server, tool and category, each
// tool's longest retry loop (per tenant, server and tool), and
// the OTel MCP metric mcp.server.operation.duration as the histogram
// mcp_server_operation_duration_seconds, all refreshed periodically from
// ClickHouse. The chain analytics reuse the queries package, so a gauge
// means exactly what the API answers for the same window; the rest comes
// from the .sql files here.
//
// Cardinality is capped: each metric keeps at most MaxSeries series (the
// busiest first) and the chain analytics are exported for at most MaxPairs
// (tenant, server) pairs; what is cut is counted in
// mcplens_gauges_series_dropped_total{metric}. The chain analytics are
// asked for every pair at once (queries.Filter.ByPair): a refresh is a
// fixed handful of statements, however many pairs the fleet has.
package gauges

import (
	"context"
	"embed"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/mcplens/mcplens/queries"
)

//go:embed *.sql
var files embed.FS

func mustSQL(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("gauges: %v", err))
	}
	return string(b)
}

var (
	windowCallsSQL = mustSQL("window_calls.sql")
	durationsSQL   = mustSQL("durations.sql")
)

// DurationBuckets are the bucket bounds of mcp.server.operation.duration in
// the OTel MCP semantic conventions, in seconds; durations.sql counts the
// same bounds in milliseconds.
var DurationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// Config tunes the exporter. Zero values take the defaults in brackets.
type Config struct {
	// Window is the trailing window the gauges describe [1h].
	Window time.Duration
	// Every is the refresh period [1m].
	Every time.Duration
	// MaxSeries caps the series of each metric [5000].
	MaxSeries int
	// MaxPairs caps the (tenant, server) pairs whose retry chains, re-calls
	// and misclassifications are exported, busiest first [50]. The chain
	// analytics are computed for every pair in one query each
	// (misclassifications is two), whatever the cap.
	MaxPairs int
	// RetryWindow and MinChains are the analytics' parameters
	// [queries.DefaultRetryWindow, queries.DefaultMinChains].
	RetryWindow time.Duration
	MinChains   int64
	// Settle is how long after its ingest time a call is first counted in
	// the duration histogram, so that the batch holding it has been
	// inserted [30s]. Lookback bounds how old its request time may be [24h].
	Settle   time.Duration
	Lookback time.Duration
	// QueryTimeout bounds one refresh [30s].
	QueryTimeout time.Duration
	Now          func() time.Time
}

func (c *Config) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Window, time.Hour)
	def(&c.Every, time.Minute)
	def(&c.RetryWindow, queries.DefaultRetryWindow)
	def(&c.Settle, 30*time.Second)
	def(&c.Lookback, 24*time.Hour)
	def(&c.QueryTimeout, 30*time.Second)
	if c.MaxSeries <= 0 {
		c.MaxSeries = 5000
	}
	if c.MaxPairs <= 0 {
		c.MaxPairs = 50
	}
	if c.MinChains <= 0 {
		c.MinChains = queries.DefaultMinChains
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Exporter is a prometheus.Collector serving the latest refresh. Refresh
// and Collect are safe for concurrent use.
type Exporter struct {
	db  queries.DB
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	snapshot []prometheus.Metric
	hist     map[histKey]*histState
	after    int64 // ingested_ms already counted in the histogram

	refreshSeconds prometheus.Histogram
	refreshErrors  *prometheus.CounterVec
	lastSuccess    prometheus.Gauge
	dropped        *prometheus.CounterVec
}

// Metric descriptions. Gauges about the window carry _window_ in their name
// and describe the Window before the last refresh.
var (
	labels4 = []string{"tenant", "server", "tool", "category"}

	windowSecondsDesc = prometheus.NewDesc("mcplens_window_seconds",
		"Length of the trailing window the mcplens_window_* gauges describe (-gauges-window).", nil, nil)
	callsDesc = prometheus.NewDesc("mcplens_window_calls",
		"tools/call requests in the trailing window by tenant, server, tool and category; failure is true for failure categories.",
		append(labels4, "failure"), nil)
	misflaggedDesc = prometheus.NewDesc("mcplens_window_misflagged_calls",
		"Calls in the trailing window whose isError flag contradicts their category; failure=true are hidden failures (a failure sent as a success).",
		append(labels4, "failure"), nil)
	chainsDesc = prometheus.NewDesc("mcplens_window_retry_chains",
		"Retry chains started in the trailing window by the first call's category and declared/expected retryability (yes, no, unknown), and outcome (retry_then_success, retry_then_fail, no_retry).",
		append(labels4, "declared_retryable", "expected_retryable", "outcome"), nil)
	recallFailuresDesc = prometheus.NewDesc("mcplens_window_recall_failures",
		"Failed calls in the trailing window (continuations left out): the denominator of the unchanged re-call rate.", labels4, nil)
	unchangedDesc = prometheus.NewDesc("mcplens_window_unchanged_recalls",
		"Failed calls in the trailing window followed within the retry window by the same call with identical arguments.", labels4, nil)
	retryAfterDesc = prometheus.NewDesc("mcplens_window_retry_after_failures",
		"Failed calls in the trailing window (continuations left out) that carried the server's retry-after hint; only tools and categories with one have a series.", labels4, nil)
	beforeRetryAfterDesc = prometheus.NewDesc("mcplens_window_recalls_before_retry_after",
		"Of mcplens_window_retry_after_failures, those whose next call of the same tool in the same session came within the retry window and before the hint had passed.", labels4, nil)
	longestChainDesc = prometheus.NewDesc("mcplens_window_longest_retry_chain",
		"Calls of the longest retry chain (a session calling the tool again within the retry window of each failure) started in the trailing window, among the 1000 longest of at least 5 calls (GET /api/v1/retry-loops); tools without one have no series.",
		[]string{"tenant", "server", "tool"}, nil)
	misclassDesc = prometheus.NewDesc("mcplens_window_misclassifications",
		"Misclassifications found in the trailing window (kind: retryable_never_recovers, non_retryable_recovers, retried_non_retryable, retried_non_idempotent, misflagged), with the analytics' thresholds and minimum volume; the value is the population: retry chains, or misflagged calls.",
		append(labels4, "kind"), nil)
	definitionChangedDesc = prometheus.NewDesc("mcplens_tool_definition_changed_timestamp_seconds",
		"Unix time of the latest change of a tool's definition (its tools/list entry; docs/schemas.md) in the last 24 hours; tools whose definition did not change in that time have no series.",
		[]string{"tenant", "server", "tool"}, nil)
	durationDesc = prometheus.NewDesc("mcp_server_operation_duration_seconds",
		"OTel MCP mcp.server.operation.duration: duration of tools/call requests, rebuilt from the duration_ms of the calls ingested since the api started (cumulative; reset on restart).",
		[]string{"tenant", "server", "gen_ai_tool_name", "mcp_method_name", "error_type"}, nil)
)

// New returns an exporter registered on reg, with its own metrics. Call Run
// (or Refresh) to fill it; until then it exports only those.
func New(db queries.DB, reg prometheus.Registerer, log *slog.Logger, cfg Config) *Exporter {
	cfg.defaults()
	f := promauto.With(reg)
	x := &Exporter{
		db: db, cfg: cfg, log: log,
		hist:  map[histKey]*histState{},
		after: cfg.Now().UnixMilli() - cfg.Settle.Milliseconds(),
		refreshSeconds: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "mcplens_gauges_refresh_duration_seconds",
			Help:    "Time to refresh the analytics gauges from ClickHouse.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 10),
		}),
		refreshErrors: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_gauges_refresh_errors_total",
			Help: "Failed gauge queries by query; the previous values stay exported.",
		}, []string{"query"}),
		lastSuccess: f.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_gauges_last_success_timestamp_seconds",
			Help: "Unix time of the last refresh in which every gauge query succeeded.",
		}),
		dropped: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_gauges_series_dropped_total",
			Help: "Series left out by the cardinality caps, by metric, summed over refreshes (-gauges-max-series, -gauges-max-pairs).",
		}, []string{"metric"}),
	}
	reg.MustRegister(x)
	return x
}

// Describe sends the descriptions of the refreshed metrics.
func (x *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{windowSecondsDesc, callsDesc, misflaggedDesc, chainsDesc, recallFailuresDesc, unchangedDesc, retryAfterDesc, beforeRetryAfterDesc, longestChainDesc, misclassDesc, definitionChangedDesc, durationDesc} {
		ch <- d
	}
}

// Collect sends the metrics of the last refresh and the duration histogram.
func (x *Exporter) Collect(ch chan<- prometheus.Metric) {
	x.mu.Lock()
	snapshot := x.snapshot
	hist := make([]prometheus.Metric, 0, len(x.hist))
	for k, h := range x.hist {
		buckets := make(map[float64]uint64, len(DurationBuckets))
		for i, le := range DurationBuckets {
			buckets[le] = h.le[i]
		}
		hist = append(hist, prometheus.MustNewConstHistogram(durationDesc, h.count, h.sumMs/1000, buckets,
			k.tenant, k.server, k.tool, "tools/call", k.errorType))
	}
	x.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(windowSecondsDesc, prometheus.GaugeValue, x.cfg.Window.Seconds())
	for _, m := range snapshot {
		ch <- m
	}
	for _, m := range hist {
		ch <- m
	}
}

// Run refreshes now and then every cfg.Every until ctx is done. Errors are
// logged and counted; the previous values stay exported. Run returns when
// ctx is done.
func (x *Exporter) Run(ctx context.Context) {
	t := time.NewTicker(x.cfg.Every)
	defer t.Stop()
	for {
		if err := x.Refresh(ctx); err != nil && ctx.Err() == nil {
			x.log.Error("refresh analytics gauges", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

type windowCall struct {
	Tenant     string `ch:"tenant_name"`
	Server     string `ch:"server_name"`
	Tool       string `ch:"tool_name"`
	Category   string `ch:"category_name"`
	Failure    uint8  `ch:"failure"`
	Calls      uint64 `ch:"calls_n"`
	Misflagged uint64 `ch:"misflagged_n"`
}

// series is one gauge value waiting for the cap.
type series struct {
	desc   *prometheus.Desc
	value  float64
	labels []string
}

// Refresh recomputes every metric. When a query fails, every gauge keeps
// the values of the previous refresh and the first error is returned; the
// histogram advances only when its own query succeeds.
func (x *Exporter) Refresh(ctx context.Context) error {
	start := time.Now()
	defer func() { x.refreshSeconds.Observe(time.Since(start).Seconds()) }()
	ctx, cancel := context.WithTimeout(ctx, x.cfg.QueryTimeout)
	defer cancel()
	now := x.cfg.Now()
	f := queries.Filter{From: now.Add(-x.cfg.Window), To: now}

	var errs []error
	fail := func(query string, err error) {
		x.refreshErrors.WithLabelValues(query).Inc()
		errs = append(errs, err)
	}
	var rows []windowCall
	if err := x.db.Select(ctx, &rows, windowCallsSQL,
		clickhouse.Named("from_s", f.From.Unix()), clickhouse.Named("to_s", f.To.Unix()),
		clickhouse.Named("from_ms", f.From.UnixMilli()), clickhouse.Named("to_ms", f.To.UnixMilli())); err != nil {
		fail("window_calls", fmt.Errorf("window calls: %w", err))
	}
	var calls, misflagged []series
	pairVolume := map[[2]string]uint64{}
	for _, r := range rows {
		calls = append(calls, series{callsDesc, float64(r.Calls), []string{r.Tenant, r.Server, r.Tool, r.Category, strconv.FormatBool(r.Failure == 1)}})
		if r.Misflagged > 0 {
			misflagged = append(misflagged, series{misflaggedDesc, float64(r.Misflagged), []string{r.Tenant, r.Server, r.Tool, r.Category, strconv.FormatBool(r.Failure == 1)}})
		}
		if r.Failure == 1 {
			pairVolume[[2]string{r.Tenant, r.Server}] += r.Calls
		}
	}
	var chains, recallFailures, unchanged, retryAfter, beforeRetryAfter, longest, misclass []series
	// The busiest MaxPairs pairs with a failure are kept; the chain
	// analytics are asked once for every pair (queries.Filter.ByPair), a
	// statement each, and the rows of the other pairs left out. Asked pair
	// by pair, 50 pairs took 302 statements and 9-18 s of ClickHouse a
	// refresh at 1M calls (BENCHMARKS.md, thirty-ninth round).
	kept := map[[2]string]bool{}
	for i, p := range busiest(pairVolume) {
		if i >= x.cfg.MaxPairs {
			x.dropped.WithLabelValues("pairs").Inc()
			continue
		}
		kept[p] = true
	}
	if len(kept) > 0 {
		pf := f
		pf.ByPair = true
		outcomes, err := queries.RetryOutcomes(ctx, x.db, pf, x.cfg.RetryWindow)
		if err != nil {
			fail("retry_outcomes", err)
		}
		for _, o := range outcomes {
			if !kept[[2]string{o.Tenant, o.Server}] {
				continue
			}
			l := []string{o.Tenant, o.Server, o.Tool, o.Category, retryability(o.DeclaredRetryable), retryability(o.ExpectedRetryable)}
			for _, oc := range []struct {
				name string
				n    uint64
			}{{"retry_then_success", o.RetryThenSuccess}, {"retry_then_fail", o.RetryThenFail}, {"no_retry", o.NoRetry}} {
				if oc.n > 0 {
					chains = append(chains, series{chainsDesc, float64(oc.n), append(append([]string{}, l...), oc.name)})
				}
			}
		}
		recalls, err := queries.Recalls(ctx, x.db, pf, x.cfg.RetryWindow)
		if err != nil {
			fail("recalls", err)
		}
		for _, r := range recalls {
			if !kept[[2]string{r.Tenant, r.Server}] {
				continue
			}
			l := []string{r.Tenant, r.Server, r.Tool, r.Category}
			recallFailures = append(recallFailures, series{recallFailuresDesc, float64(r.Failures), l})
			unchanged = append(unchanged, series{unchangedDesc, float64(r.Unchanged), l})
			if r.WithRetryAfter > 0 {
				retryAfter = append(retryAfter, series{retryAfterDesc, float64(r.WithRetryAfter), l})
				beforeRetryAfter = append(beforeRetryAfter, series{beforeRetryAfterDesc, float64(r.BeforeRetryAfter), l})
			}
		}
		// The longest chain of each tool: the loops come longest first, so
		// a tool's first is its longest. A tool whose longest chain is
		// shorter than the 1000th of the window has no series.
		loops, err := queries.RetryLoops(ctx, x.db, f, x.cfg.RetryWindow, queries.RetryLoopsOptions{MinAttempts: 5, Limit: queries.MaxRetryLoopsLimit})
		if err != nil {
			fail("retry_loops", err)
		}
		seen := map[[3]string]bool{}
		for _, l := range loops {
			k := [3]string{l.Tenant, l.Server, l.Tool}
			if !kept[[2]string{l.Tenant, l.Server}] || seen[k] {
				continue
			}
			seen[k] = true
			longest = append(longest, series{longestChainDesc, float64(l.Attempts), k[:]})
		}
		mis, err := queries.Misclassifications(ctx, x.db, pf, x.cfg.RetryWindow, x.cfg.MinChains)
		if err != nil {
			fail("misclassifications", err)
		}
		for _, m := range mis {
			if !kept[[2]string{m.Tenant, m.Server}] {
				continue
			}
			v := m.Chains
			if m.Kind == queries.KindMisflagged {
				v = m.Calls
			}
			misclass = append(misclass, series{misclassDesc, float64(v), []string{m.Tenant, m.Server, m.Tool, m.Category, m.Kind}})
		}
	}
	changed, err := definitionChanges(ctx, x.db, now)
	if err != nil {
		fail("definition_changes", err)
	}
	histErr := x.refreshDurations(ctx, now)
	if histErr != nil {
		fail("durations", histErr)
	}

	var snapshot []prometheus.Metric
	for _, group := range []struct {
		name string
		s    []series
	}{
		{"mcplens_window_calls", calls},
		{"mcplens_window_misflagged_calls", misflagged},
		{"mcplens_window_retry_chains", chains},
		{"mcplens_window_recall_failures", recallFailures},
		{"mcplens_window_unchanged_recalls", unchanged},
		{"mcplens_window_retry_after_failures", retryAfter},
		{"mcplens_window_recalls_before_retry_after", beforeRetryAfter},
		{"mcplens_window_longest_retry_chain", longest},
		{"mcplens_window_misclassifications", misclass},
		{"mcplens_tool_definition_changed_timestamp_seconds", changed},
	} {
		s := group.s
		sort.SliceStable(s, func(i, j int) bool { return s[i].value > s[j].value })
		if len(s) > x.cfg.MaxSeries {
			x.dropped.WithLabelValues(group.name).Add(float64(len(s) - x.cfg.MaxSeries))
			s = s[:x.cfg.MaxSeries]
		}
		for _, m := range s {
			snapshot = append(snapshot, prometheus.MustNewConstMetric(m.desc, prometheus.GaugeValue, m.value, m.labels...))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("refresh gauges: %d queries failed, first: %w", len(errs), errs[0])
	}
	x.mu.Lock()
	x.snapshot = snapshot
	x.mu.Unlock()
	x.lastSuccess.Set(float64(now.Unix()))
	return nil
}

// busiest orders (tenant, server) pairs by failed calls, most first.
func busiest(volume map[[2]string]uint64) [][2]string {
	pairs := make([][2]string, 0, len(volume))
	for p := range volume {
		pairs = append(pairs, p)
	}
	sort.Slice(pairs, func(i, j int) bool {
		if volume[pairs[i]] != volume[pairs[j]] {
			return volume[pairs[i]] > volume[pairs[j]]
		}
		return pairs[i][0]+"\x00"+pairs[i][1] < pairs[j][0]+"\x00"+pairs[j][1]
	})
	return pairs
}

func retryability(v int8) string {
	switch v {
	case 1:
		return "yes"
	case 0:
		return "no"
	}
	return "unknown"
}

type histKey struct{ tenant, server, tool, errorType string }

type histState struct {
	le    []uint64 // cumulative counts per DurationBuckets bound
	count uint64
	sumMs float64
}

type durationRow struct {
	Tenant    string   `ch:"tenant_name"`
	Server    string   `ch:"server_name"`
	Tool      string   `ch:"tool_name"`
	ErrorType string   `ch:"error_type"`
	Calls     uint64   `ch:"calls_n"`
	SumMs     int64    `ch:"duration_ms_sum"`
	LeCounts  []uint64 `ch:"le_counts"`
}

// refreshDurations adds the calls ingested since the last refresh (up to
// now - Settle) to the cumulative histogram. A new key beyond MaxSeries is
// counted as dropped instead.
func (x *Exporter) refreshDurations(ctx context.Context, now time.Time) error {
	until := now.UnixMilli() - x.cfg.Settle.Milliseconds()
	x.mu.Lock()
	after := x.after
	x.mu.Unlock()
	if until <= after {
		return nil
	}
	var rows []durationRow
	if err := x.db.Select(ctx, &rows, durationsSQL,
		clickhouse.Named("since_s", now.Add(-x.cfg.Lookback).Unix()),
		clickhouse.Named("after_ms", after), clickhouse.Named("until_ms", until)); err != nil {
		return fmt.Errorf("durations: %w", err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, r := range rows {
		if len(r.LeCounts) != len(DurationBuckets) {
			return fmt.Errorf("durations: %d bucket counts, want %d", len(r.LeCounts), len(DurationBuckets))
		}
		k := histKey{r.Tenant, r.Server, r.Tool, r.ErrorType}
		h, ok := x.hist[k]
		if !ok {
			if len(x.hist) >= x.cfg.MaxSeries {
				x.dropped.WithLabelValues("mcp_server_operation_duration_seconds").Inc()
				continue
			}
			h = &histState{le: make([]uint64, len(DurationBuckets))}
			x.hist[k] = h
		}
		for i, n := range r.LeCounts {
			h.le[i] += n
		}
		h.count += r.Calls
		h.sumMs += float64(r.SumMs)
	}
	x.after = until
	return nil
}
