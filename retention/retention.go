// Package retention deletes expired data: raw calls, their schema
// violations and dead letters after Config.Raw, the calls_5m and calls_5m_classes rollups after Config.Rollup. On servers with table
// TTL (ClickHouse 19.6 and later, and chDB) it sets each table's TTL and the
// server's merges delete expired rows; on older servers (18.16) it drops
// the daily partitions (PARTITION BY toYYYYMMDD), and the monthly ones of
// the fold's bookkeeping (toYYYYMM), that lie wholly before the cutoff. Both are idempotent: running them again changes nothing. It also
// folds the tool sightings older than Config.Sightings (compact.Sightings),
// which keeps every answer read from them and stops the table from growing
// by a row per tool and hour for ever, and folds the complete hours within
// Config.FoldRollup into plain counts (compact.RollupHours), which the
// long baselines and the spikes panel read, and their retry chains into a
// row a chain (compact.RollupChains), which the chain panels read.
package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/mcplens/mcplens/compact"
)

// Config says how long data is kept; 0 keeps it for ever.
type Config struct {
	Raw    time.Duration // calls, call_violations and dead_letters (-retention)
	Rollup time.Duration // calls_5m (-rollup-retention)
	// Sightings is the age after which tool sightings are folded to the
	// ends of their unchanged runs, whole UTC days
	// (-tool-sightings-fold-after); 0 never folds them.
	Sightings time.Duration
	// FoldRollup is how far back complete hours are folded into plain
	// counts and their chains into rows (-rollup-fold, whole days); 0 never
	// folds them, and readers merge calls_5m's states and group the raw
	// calls for every hour.
	FoldRollup time.Duration
	// Cluster is the ClickHouse cluster that holds the tables in cluster
	// mode (-clickhouse-cluster), empty for one server. On a cluster Apply
	// drops the partitions and sets the TTLs of every node's *_local
	// tables, ON CLUSTER, and folds the tool sightings and the complete
	// hours through compact.Clustered. Run it from one process: two
	// folding at once write identical folds, and readers take one.
	Cluster string
}

// foldSettle is how old an hour's last insert must be before RollupHours
// folds it: far longer than an insert takes to pass through the
// materialized views.
const foldSettle = 10 * time.Minute

// foldPoll and foldWait bound the wait for the sightings fold's mutation.
const (
	foldPoll = 200 * time.Millisecond
	foldWait = 10 * time.Minute
)

// Validate checks that the rollup outlives the raw calls it summarises and
// that every setting is whole days.
func (c Config) Validate() error {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"-retention", c.Raw}, {"-rollup-retention", c.Rollup}, {"-tool-sightings-fold-after", c.Sightings}, {"-rollup-fold", c.FoldRollup}} {
		if d.v < 0 || d.v%(24*time.Hour) != 0 {
			return fmt.Errorf("%s %s: want whole days (e.g. 720h for 30 days), or 0 to keep for ever", d.flag, d.v)
		}
	}
	if c.Raw > 0 && c.Rollup > 0 && c.Rollup < c.Raw {
		return fmt.Errorf("-rollup-retention (%s) is shorter than -retention (%s): the rollup would lose data the raw table still has", c.Rollup, c.Raw)
	}
	return nil
}

// DB is what Apply needs: clickhouse-go's driver.Conn, or chDB in tests.
type DB interface {
	Exec(ctx context.Context, query string, args ...any) error
	Select(ctx context.Context, dest any, query string, args ...any) error
}

// table is one table under retention: its time column and which setting
// applies.
type table struct {
	name, column string
	rollup       bool
}

var tables = []table{
	{"calls", "ts", false},
	{"dead_letters", "received", false},
	{"calls_5m", "bucket", true},
	{"calls_5m_classes", "bucket", true},
	{"calls_hour_inserts", "hour", true},
	{"calls_5m_folded", "hour", true},
	{"calls_1h_folded", "hour", true},
	{"calls_5m_folds", "hour", true},
	{"calls_copies_folded", "hour", false},
	{"calls_latest_folded", "hour", false},
	{"call_violations", "ts", false},
	{"violations_folded", "hour", false},
	{"violation_outcomes_folded", "hour", false},
	{"invalid_args_folded", "hour", false},
	{"calls_categories_folded", "hour", true},
	{"calls_flags_folded", "hour", false},
	{"sessions_folded", "hour", false},
	{"chains_folded", "hour", false},
	{"chain_folds", "hour", false},
	{"recalls_folded", "hour", false},
}

// Result is what one Apply did.
type Result struct {
	Mode    string   // "ttl" or "partitions"
	Changed []string // "calls: TTL 30 days", "calls: dropped partition 20261029", ...
}

// Apply enforces cfg at time now. Table and column names are fixed in this
// file; the day counts and partition ids are bound parameters.
func Apply(ctx context.Context, db DB, cfg Config, now time.Time) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if cfg.Cluster != "" {
		c, err := compact.NewClustered(ctx, db, cfg.Cluster)
		if err != nil {
			return Result{}, fmt.Errorf("retention: %w", err)
		}
		db = c
	}
	ttl, err := supportsTTL(ctx, db)
	if err != nil {
		return Result{}, err
	}
	res := Result{Mode: "partitions"}
	if ttl {
		res.Mode = "ttl"
	}
	for _, t := range tables {
		keep := cfg.Raw
		if t.rollup {
			keep = cfg.Rollup
		}
		if keep == 0 {
			continue
		}
		days := int64(keep / (24 * time.Hour))
		if ttl {
			changed, err := setTTL(ctx, db, t, days)
			if err != nil {
				return res, err
			}
			if changed {
				res.Changed = append(res.Changed, fmt.Sprintf("%s: TTL %s + %d days", t.name, t.column, days))
			}
			continue
		}
		dropped, err := dropPartitions(ctx, db, t, now.Add(-keep))
		res.Changed = append(res.Changed, dropped...)
		if err != nil {
			return res, err
		}
	}
	if cfg.Sightings > 0 {
		// At a UTC midnight, so that whole days fold, once a day.
		cutoff := now.Add(-cfg.Sightings).UTC().Truncate(24 * time.Hour)
		f, err := compact.Sightings(ctx, db, cutoff, foldPoll, foldWait)
		if err != nil {
			return res, fmt.Errorf("retention: %w", err)
		}
		if f.Folded > 0 {
			res.Changed = append(res.Changed, fmt.Sprintf("tool_sightings: folded %d of the %d sightings before %s in %s",
				f.Folded, f.Before, cutoff.Format(time.DateOnly), f.Took.Round(time.Millisecond)))
		}
	}
	if cfg.FoldRollup > 0 {
		f, err := compact.RollupHours(ctx, db, now, cfg.FoldRollup, foldSettle)
		if err != nil {
			return res, fmt.Errorf("retention: %w", err)
		}
		if n := len(f.Folded); n > 0 {
			res.Changed = append(res.Changed, fmt.Sprintf("calls_5m_folded: folded %d hours from %s to %s in %s", n,
				f.Folded[0].Format(time.RFC3339), f.Folded[n-1].Format(time.RFC3339), f.Took.Round(time.Millisecond)))
		}
		if n := len(f.Quiet); n > 0 {
			res.Changed = append(res.Changed, fmt.Sprintf("calls_5m_folded: recorded %d quiet hours (no calls) from %s to %s as empty", n,
				f.Quiet[0].Format(time.RFC3339), f.Quiet[n-1].Format(time.RFC3339)))
		}
		if f.Superseded > 0 {
			res.Changed = append(res.Changed, fmt.Sprintf("calls_5m_folded: deleting %d superseded folds", f.Superseded))
		}
		c, err := compact.RollupChains(ctx, db, now, cfg.FoldRollup, foldSettle)
		if err != nil {
			return res, fmt.Errorf("retention: %w", err)
		}
		if n := len(c.Folded); n > 0 {
			res.Changed = append(res.Changed, fmt.Sprintf("chains_folded: folded %d hours from %s to %s in %s (%d with a chain still open)", n,
				c.Folded[0].Format(time.RFC3339), c.Folded[n-1].Format(time.RFC3339), c.Took.Round(time.Millisecond), len(c.Open)))
		}
		if n := len(c.Quiet); n > 0 {
			res.Changed = append(res.Changed, fmt.Sprintf("chains_folded: recorded %d quiet hours (no calls) from %s to %s as empty", n,
				c.Quiet[0].Format(time.RFC3339), c.Quiet[n-1].Format(time.RFC3339)))
		}
		if c.Superseded > 0 {
			res.Changed = append(res.Changed, fmt.Sprintf("chains_folded: deleting %d superseded folds", c.Superseded))
		}
	}
	return res, nil
}

// supportsTTL reports whether the server has MergeTree TTL (19.6+).
func supportsTTL(ctx context.Context, db DB) (bool, error) {
	var v []struct {
		V string `ch:"v"`
	}
	if err := db.Select(ctx, &v, "SELECT version() AS v"); err != nil {
		return false, fmt.Errorf("retention: server version: %w", err)
	}
	if len(v) != 1 {
		return false, fmt.Errorf("retention: server version: %d rows", len(v))
	}
	parts := strings.SplitN(v[0].V, ".", 3)
	if len(parts) < 2 {
		return false, nil
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false, nil
	}
	return major > 19 || major == 19 && minor >= 6, nil
}

// setTTL sets t's TTL to days unless the table already has it, and reports
// whether it changed anything. The server rewrites the TTL expression as
// "<column> + toIntervalDay(<days>)". On a cluster the TTL is that of the
// replicated t_local, as the node db is connected to has it.
func setTTL(ctx context.Context, db DB, t table, days int64) (bool, error) {
	var rows []struct {
		Engine string `ch:"engine_full"`
	}
	if err := db.Select(ctx, &rows, "SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = @table",
		clickhouse.Named("table", compact.LocalTable(db, t.name))); err != nil {
		return false, fmt.Errorf("retention: read TTL of %s: %w", t.name, err)
	}
	if len(rows) != 1 {
		return false, fmt.Errorf("retention: table %s not found; run ingest migrate", t.name)
	}
	if strings.Contains(rows[0].Engine, fmt.Sprintf("TTL %s + toIntervalDay(%d)", t.column, days)) {
		return false, nil
	}
	if err := db.Exec(ctx, "ALTER TABLE "+t.name+" MODIFY TTL "+t.column+" + INTERVAL @days DAY",
		clickhouse.Named("days", days)); err != nil {
		return false, fmt.Errorf("retention: set TTL of %s: %w", t.name, err)
	}
	return true, nil
}

// dropPartitions drops t's partitions that end at or before cutoff's UTC
// day: daily ones (toYYYYMMDD) and monthly ones (toYYYYMM, the tables of a
// row an hour), a month once the whole month is past. On a cluster they are
// the partitions of t_local on one replica of every shard.
func dropPartitions(ctx context.Context, db DB, t table, cutoff time.Time) ([]string, error) {
	var parts []struct {
		Partition string `ch:"partition"`
	}
	of, list := compact.SystemRows(db, "parts", t.name)
	if err := db.Select(ctx, &parts, "SELECT DISTINCT partition FROM "+of+" AND active ORDER BY partition", list...); err != nil {
		return nil, fmt.Errorf("retention: list partitions of %s: %w", t.name, err)
	}
	cutDay := cutoff.UTC().Truncate(24 * time.Hour)
	var dropped []string
	for _, p := range parts {
		id := strings.Trim(p.Partition, "'")
		end, err := partitionEnd(id)
		if err != nil {
			return dropped, fmt.Errorf("retention: %s has partition %q: %w", t.name, p.Partition, err)
		}
		if end.After(cutDay) {
			continue // holds rows at or after the cutoff
		}
		n, _ := strconv.ParseUint(id, 10, 32)
		if err := db.Exec(ctx, "ALTER TABLE "+t.name+" DROP PARTITION @partition", clickhouse.Named("partition", uint32(n))); err != nil {
			return dropped, fmt.Errorf("retention: drop partition %s of %s: %w", id, t.name, err)
		}
		dropped = append(dropped, fmt.Sprintf("%s: dropped partition %s", t.name, id))
	}
	return dropped, nil
}

// partitionEnd is the end (exclusive, UTC) of a toYYYYMMDD or toYYYYMM
// partition id.
func partitionEnd(id string) (time.Time, error) {
	if day, err := time.Parse("20060102", id); err == nil && len(id) == 8 {
		return day.AddDate(0, 0, 1), nil
	}
	if month, err := time.Parse("200601", id); err == nil && len(id) == 6 {
		return month.AddDate(0, 1, 0), nil
	}
	return time.Time{}, errors.New("not a toYYYYMMDD day or a toYYYYMM month")
}

// Metrics are the retention job's Prometheus metrics.
type Metrics struct {
	runs        *prometheus.CounterVec
	changes     prometheus.Counter
	lastSuccess prometheus.Gauge
}

// NewMetrics registers the retention metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		runs: f.NewCounterVec(prometheus.CounterOpts{
			Name: "mcplens_retention_runs_total",
			Help: "Retention runs by result (ok, error).",
		}, []string{"result"}),
		changes: f.NewCounter(prometheus.CounterOpts{
			Name: "mcplens_retention_changes_total",
			Help: "Partitions dropped, TTLs set and tool sightings folds done by the retention job.",
		}),
		lastSuccess: f.NewGauge(prometheus.GaugeOpts{
			Name: "mcplens_retention_last_success_timestamp_seconds",
			Help: "Unix time of the last successful retention run.",
		}),
	}
}

// Run applies cfg now and then every interval until ctx is done. Errors
// are logged and counted; the next run tries again.
func Run(ctx context.Context, db DB, cfg Config, every time.Duration, m *Metrics, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		start := time.Now()
		res, err := Apply(ctx, db, cfg, start)
		for _, c := range res.Changed {
			log.Info("retention", "mode", res.Mode, "change", c)
		}
		m.changes.Add(float64(len(res.Changed)))
		if err != nil && ctx.Err() == nil {
			m.runs.WithLabelValues("error").Inc()
			log.Error("retention run failed", "err", err)
		} else if err == nil {
			m.runs.WithLabelValues("ok").Inc()
			m.lastSuccess.SetToCurrentTime()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
