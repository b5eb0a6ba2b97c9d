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
			Help: "Calls not accepted or lost after acceptance, by reason (buffer_full, insert_failed).",
		}, []string{"reason"}),
		classified: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_ingest_calls_classified_total",
			Help: "Accepted calls by category.",
		}, []string{"category"}),
		queued: f.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_ingest_queue_calls",
			Help: "Calls accepted and waiting to be inserted.",
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
	}
}

func (m *Metrics) observeInsert(table string, rows int, d time.Duration) {
	m.insertSeconds.WithLabelValues(table).Observe(d.Seconds())
	m.inserted.WithLabelValues(table).Add(float64(rows))
	if table == "calls" {
		m.batchRows.Observe(float64(rows))
	}
}
