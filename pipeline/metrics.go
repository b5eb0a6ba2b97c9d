package pipeline

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the ingest pipeline's Prometheus metrics. Labels are bounded:
// source, result, reason, table and category come from fixed sets; tool and
// server names never become label values.
type Metrics struct {
	lines         *prometheus.CounterVec
	rejected      *prometheus.CounterVec
	dropped       *prometheus.CounterVec
	classified    *prometheus.CounterVec
	queued        prometheus.Gauge
	queueCapacity prometheus.Gauge
	batchRows     prometheus.Histogram
	insertSeconds *prometheus.HistogramVec
	insertErrors  *prometheus.CounterVec
	inserted      *prometheus.CounterVec
	insertFails   *prometheus.CounterVec
	deadLettered  *prometheus.CounterVec

	spoolBytes    prometheus.Gauge
	spoolPending  prometheus.Gauge
	spoolCapacity prometheus.Gauge
	spoolSegments prometheus.Gauge
	spoolFsync    prometheus.Histogram
	spoolErrors   *prometheus.CounterVec
	spilled       prometheus.Counter
	replayed      prometheus.Counter
	inflight      prometheus.Gauge
	argsCapped    prometheus.Counter

	pairEntries   *prometheus.GaugeVec
	pairBytes     prometheus.Gauge
	pairForgotten *prometheus.CounterVec
	pairReach     prometheus.Gauge
	pairMerged    *prometheus.CounterVec
	pairLogBytes  prometheus.Gauge
	pairRecovered *prometheus.CounterVec
}

// NewMetrics registers the pipeline metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		lines: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_lines_total",
			Help: "Input lines or spans received, by source and result (accepted, skipped, rejected).",
		}, []string{"source", "result"}),
		rejected: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_rejected_total",
			Help: "Rejected input (lines, spans or whole requests), by reason.",
		}, []string{"reason"}),
		dropped: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_calls_dropped_total",
			Help: "Calls not accepted (the sender got 4xx/5xx and may resend: buffer_full, spool_full, disk_full, too_many_requests) or lost after acceptance (spool_corrupt, shutdown_timeout without a spool, dead_letter_failed), by reason.",
		}, []string{"reason"}),
		classified: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_calls_classified_total",
			Help: "Accepted calls by category.",
		}, []string{"category"}),
		queued: f.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_queue_calls",
			Help: "Calls accepted and held in memory until inserted, those of inserts in flight included; more may wait in the spool.",
		}),
		queueCapacity: f.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_queue_capacity_calls",
			Help: "Capacity of the insert queue (-queue-capacity).",
		}),
		batchRows: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "mcplens_ingest_batch_rows",
			Help:    "Rows per insert batch into the calls table.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10),
		}),
		insertSeconds: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcplens_ingest_insert_duration_seconds",
			Help:    "Latency of one batch insert, by table.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}, []string{"table"}),
		insertErrors: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_insert_errors_total",
			Help: "Failed batch inserts, by table. A failed batch is retried; it is not lost.",
		}, []string{"table"}),
		inserted: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_rows_inserted_total",
			Help: "Rows inserted into ClickHouse, by table.",
		}, []string{"table"}),
		insertFails: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_insert_failures_total",
			Help: "Failed batch inserts by table and kind: network, timeout and server_busy are retried; server_rejected and bad_row move the rows to dead_letters.",
		}, []string{"table", "kind"}),
		deadLettered: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_calls_dead_lettered_total",
			Help: "Accepted calls that ClickHouse refused for good (schema or type errors) and that were written to dead_letters instead, by reason (server_rejected, bad_row).",
		}, []string{"reason"}),
		spoolBytes: f.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_spool_bytes",
			Help: "Bytes of spool segment files on disk (pending bytes plus at most one segment of confirmed ones).",
		}),
		spoolPending: f.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_spool_pending_bytes",
			Help: "Bytes of spooled calls not yet confirmed by ClickHouse; receivers answer 503 when a request would take it past mcplens_ingest_spool_capacity_bytes.",
		}),
		spoolCapacity: f.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_spool_capacity_bytes",
			Help: "Most bytes of unconfirmed calls the spool may hold (-spool-max-bytes).",
		}),
		spoolSegments: f.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_spool_segments",
			Help: "Spool segment files on disk.",
		}),
		spoolFsync: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "mcplens_ingest_spool_fsync_duration_seconds",
			Help:    "Latency of one spool fsync (shared by the requests waiting on it under -spool-fsync=always).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 3, 10),
		}),
		spoolErrors: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_spool_errors_total",
			Help: "Spool I/O errors by operation (write, fsync, read, checkpoint, corrupt).",
		}, []string{"op"}),
		spilled: f.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_ingest_spool_spilled_calls_total",
			Help: "Accepted calls kept only on disk because the memory queue was full; they are read back in order.",
		}),
		replayed: f.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_ingest_spool_read_calls_total",
			Help: "Calls read back from the spool: spilled calls, and on start the calls a previous process left.",
		}),
		argsCapped: f.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_ingest_args_capped_total",
			Help: "Accepted capture lines whose exploded arguments were cut by the MaxArgs or MaxValueBytes caps (args_json keeps them whole; docs/capture-format.md).",
		}),
		inflight: f.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_inflight_requests",
			Help: "Receiver requests being served (-max-concurrent-requests bounds it).",
		}),
		pairEntries: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mcplens_ingest_otlp_pair_entries",
			Help: "The OTLP span pairer's entries, by state: held (a linkable span waiting -otlp-pair-window for its other side, not yet a row) and remembered (a stored row whose other side may still come).",
		}, []string{"state"}),
		pairBytes: f.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_otlp_pair_bytes",
			Help: "Estimated memory of the span pairer's entries, against -otlp-pair-max-bytes.",
		}),
		pairForgotten: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_otlp_pair_forgotten_total",
			Help: "Remembered rows the span pairer forgot, by reason: age (15 minutes passed), or capacity and bytes (forgotten early, to stay within -otlp-pair-capacity or -otlp-pair-max-bytes). The other side of a row forgotten early, if it comes, is stored as a second row of the call.",
		}, []string{"reason"}),
		pairReach: f.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_otlp_pair_reach_seconds",
			Help: "How long the row the span pairer forgot last had been remembered: 900 when rows live their 15 minutes, less when the bounds make it forget early. A call's second side that arrives later than this after the first is stored as a second row.",
		}),
		pairMerged: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_otlp_pairs_merged_total",
			Help: "Client and server sides of a call merged across export requests, by when the second side came: held (within -otlp-pair-window: one row) or late (onto a remembered row, which the merged row replaces).",
		}, []string{"when"}),
		pairLogBytes: f.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_otlp_pair_log_bytes",
			Help: "Bytes of the pair log's segment files on disk (<spool-dir>/pairs): the spans held for -otlp-pair-window, made durable, and what happened to them since the oldest one still held.",
		}),
		pairRecovered: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_otlp_pair_recovered_total",
			Help: "What the pair log gave back on start: after a crash, held (spans held again until their pair window passes) and merged (merged rows queued again, copies of rows that may be stored already); after a clean shutdown, remembered (stored rows remembered again for a late other side or copy, until their 15 minutes pass).",
		}, []string{"what"}),
	}
}

func (m *Metrics) observeInsert(table string, rows int, d time.Duration) {
	m.insertSeconds.WithLabelValues(table).Observe(d.Seconds())
	m.inserted.WithLabelValues(table).Add(float64(rows))
	if table == "calls" {
		m.batchRows.Observe(float64(rows))
	}
}

// pairMetrics are the span pairer's instruments, their labels resolved
// once: the pairer updates them under its lock, once per forgotten row.
type pairMetrics struct {
	held, kept, bytes, reach               prometheus.Gauge
	forgotAge, forgotCapacity, forgotBytes prometheus.Counter
	mergedHeld, mergedLate                 prometheus.Counter
}

func (m *Metrics) pair() pairMetrics {
	return pairMetrics{
		held: m.pairEntries.WithLabelValues("held"), kept: m.pairEntries.WithLabelValues("remembered"),
		bytes: m.pairBytes, reach: m.pairReach,
		forgotAge: m.pairForgotten.WithLabelValues("age"), forgotCapacity: m.pairForgotten.WithLabelValues("capacity"),
		forgotBytes: m.pairForgotten.WithLabelValues("bytes"),
		mergedHeld:  m.pairMerged.WithLabelValues("held"), mergedLate: m.pairMerged.WithLabelValues("late"),
	}
}

// countClassified adds calls to mcplens_ingest_calls_classified_total with
// one counter update per category present rather than one per call.
func (m *Metrics) countClassified(calls []Call) {
	type tally struct {
		cat string
		n   int
	}
	var buf [16]tally
	seen := buf[:0]
	for i := range calls {
		c := calls[i].Category
		j := 0
		for j < len(seen) && seen[j].cat != c {
			j++
		}
		if j == len(seen) {
			seen = append(seen, tally{cat: c})
		}
		seen[j].n++
	}
	for _, t := range seen {
		m.classified.WithLabelValues(t.cat).Add(float64(t.n))
	}
}
