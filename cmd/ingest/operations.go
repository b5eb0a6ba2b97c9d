package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mcplens/mcplens/auth"
	"github.com/mcplens/mcplens/chconn"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/retention"
	"github.com/mcplens/mcplens/schema"
)

// opsConfig holds the settings of durability, access and retention
// (docs/operations.md).
type opsConfig struct {
	spool          pipeline.SpoolConfig
	spoolFsync     string
	maxConcurrent  int
	tokensFile     string
	tokensInline   string // MCPLENS_TOKENS
	insecureOpen   bool
	retention      retention.Config
	retentionEvery time.Duration
	memoryLimit    string // -memory-limit as given; "" = GOMEMLIMIT, else defaultMemoryLimit
}

// defaultMemoryLimit is the Go heap's soft limit when neither -memory-limit
// nor GOMEMLIMIT says otherwise: 256 MiB per 300 000 calls of
// -queue-capacity (a queued call takes about 600 bytes, encoded), at least
// 256 MiB, plus -otlp-pair-max-bytes, so that a larger queue or pairer does
// not run the collector without pause. Below it the collector runs as GOGC
// says; near it, it collects more often, which keeps the resident memory of
// a busy ingest near the live data (BENCHMARKS.md: Ingest memory).
func defaultMemoryLimit(queueCapacity int, pairMaxBytes int64) int64 {
	return max(256<<20, int64(queueCapacity)*(256<<20)/300000) + pairMaxBytes
}

func (o *opsConfig) register(fs *flag.FlagSet, getenv func(string) string) {
	fs.StringVar(&o.spool.Dir, "spool-dir", envOr(getenv, "MCPLENS_SPOOL_DIR", "spool"), "directory of the on-disk spool (write-ahead log) of accepted calls; it survives restarts and must not be shared between processes (env MCPLENS_SPOOL_DIR)")
	fs.StringVar(&o.spoolFsync, "spool-fsync", envOr(getenv, "MCPLENS_SPOOL_FSYNC", "always"), "when spooled calls are forced to disk: always (before answering 2xx; survives power loss), interval (every -spool-fsync-interval), never (kernel writeback); every policy survives a crash of the process (env MCPLENS_SPOOL_FSYNC)")
	fs.DurationVar(&o.spool.FsyncEvery, "spool-fsync-interval", time.Second, "fsync period under -spool-fsync=interval: the most acknowledged calls a power loss can take")
	fs.Int64Var(&o.spool.MaxBytes, "spool-max-bytes", 1<<30, "most bytes of spooled calls not yet in ClickHouse; when reached, receivers answer 503 with Retry-After. About 1 KB per call: 1 GiB rides out roughly 1M calls of ClickHouse downtime")
	fs.IntVar(&o.maxConcurrent, "max-concurrent-requests", 64, "ingest requests served at once (HTTP and gRPC); more are answered 429 with Retry-After. Bounds the memory request bodies take: about this many times -max-decompressed-bytes in the worst case")
	fs.StringVar(&o.tokensFile, "tokens-file", getenv("MCPLENS_TOKENS_FILE"), "YAML or JSON file of bearer tokens [{name, token_sha256 or token, role: ingest|api|metrics, tenants}]; without tokens (and without MCPLENS_TOKENS) ingest runs in open mode (env MCPLENS_TOKENS_FILE)")
	o.tokensInline = getenv("MCPLENS_TOKENS")
	fs.BoolVar(&o.insecureOpen, "insecure-open", false, "allow open mode (no tokens) on a non-loopback -listen or -grpc-listen")
	fs.DurationVar(&o.retention.Raw, "retention", 30*24*time.Hour, "keep raw calls, their schema violations and dead letters this long (whole days); 0 keeps them for ever")
	fs.DurationVar(&o.retention.Rollup, "rollup-retention", 400*24*time.Hour, "keep the calls_5m and calls_5m_classes rollups this long (whole days, at least -retention); 0 keeps it for ever")
	fs.StringVar(&o.memoryLimit, "memory-limit", getenv("MCPLENS_MEMORY_LIMIT"), "soft limit of the Go heap, e.g. 512MiB or 1GiB; off disables it; empty uses GOMEMLIMIT when set, else 256MiB per 300000 calls of -queue-capacity (at least 256MiB) plus -otlp-pair-max-bytes. Keep it below the container's memory limit (env MCPLENS_MEMORY_LIMIT)")
	fs.DurationVar(&o.retention.Sightings, "tool-sightings-fold-after", 7*24*time.Hour, "fold tool sightings older than this (whole days) to the ends of their unchanged runs each day: every answer read from them stays, the table stops growing by a row per tool and hour; 0 keeps every sighting")
	fs.DurationVar(&o.retention.FoldRollup, "rollup-fold", 15*24*time.Hour, "fold each complete hour this far back (whole days) into plain counts once its inserts settle, and again after a late insert: the 7-day baselines of INVALID_ARGUMENT and empty-result spikes, the spikes panel's range, the rate, count and schema panels and several endpoints read them instead of merging distinct-call states and reading raw rows; and its retry chains into a row a chain, which the chain panels and endpoints add up (retry loops included), and its failures into a row a failure, which the re-calls read; 0 never folds")
	fs.DurationVar(&o.retentionEvery, "retention-every", time.Hour, "how often serve enforces -retention and -rollup-retention, folds old tool sightings and folds complete hours (-rollup-fold); 0 disables the job (use `ingest retention` from cron instead)")
}

// heapLimit returns the soft memory limit to set, and false when the
// runtime's own (GOMEMLIMIT, or none) stays.
func (o *opsConfig) heapLimit(getenv func(string) string, queueCapacity int, pairMaxBytes int64) (int64, bool, error) {
	v := o.memoryLimit
	if v == "" {
		if getenv("GOMEMLIMIT") != "" {
			return 0, false, nil
		}
		return defaultMemoryLimit(queueCapacity, pairMaxBytes), true, nil
	}
	if v == "off" {
		return math.MaxInt64, true, nil
	}
	n, err := parseBytes(v)
	if err != nil || n <= 0 {
		return 0, false, fmt.Errorf("-memory-limit %q: want a size such as 256MiB or 1GiB, or off", v)
	}
	return n, true, nil
}

// parseBytes reads a byte count with an optional binary unit suffix: B,
// KiB, MiB, GiB, TiB (GOMEMLIMIT's syntax).
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = num, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, err
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%d × %d overflows", n, mult)
	}
	return n * mult, nil
}

// validate checks the settings and fills in the parsed fsync policy and
// the retention job's cluster (-clickhouse-cluster; empty for one server).
func (o *opsConfig) validate(maxDecompressed int64, cluster string) error {
	o.retention.Cluster = cluster
	p, err := pipeline.ParseFsyncPolicy(o.spoolFsync)
	if err != nil {
		return fmt.Errorf("-spool-fsync: %w", err)
	}
	o.spool.Fsync = p
	if o.spool.Dir == "" {
		return fmt.Errorf("-spool-dir is empty: accepted calls must be spooled (docs/operations.md)")
	}
	if o.spool.MaxBytes < 2*maxDecompressed {
		return fmt.Errorf("-spool-max-bytes (%d) must be at least twice -max-decompressed-bytes (%d), so that one request always fits", o.spool.MaxBytes, maxDecompressed)
	}
	if o.maxConcurrent < 1 {
		return fmt.Errorf("-max-concurrent-requests must be positive")
	}
	if o.retentionEvery < 0 {
		return fmt.Errorf("-retention-every must not be negative")
	}
	return o.retention.Validate()
}

// tokens loads the tokens; with none it checks that open mode is safe on
// the listen addresses and says so in the log.
func (o *opsConfig) tokens(log *slog.Logger, listens map[string]string) (*auth.Tokens, error) {
	ts, err := auth.Load(o.tokensFile, o.tokensInline)
	if err != nil {
		return nil, err
	}
	if ts.Len() > 0 {
		log.Info("tokens loaded", "ingest", len(ts.WithRole(auth.RoleIngest)), "api", len(ts.WithRole(auth.RoleAPI)),
			"metrics", len(ts.WithRole(auth.RoleMetrics)))
		return ts, nil
	}
	for flag, addr := range listens {
		if err := auth.CheckOpenListen(flag, addr, o.insecureOpen); err != nil {
			return nil, err
		}
	}
	log.Warn("open mode: no tokens configured, every request is accepted and captures choose their tenant; configure -tokens-file for anything but a loopback setup",
		"insecure_open", o.insecureOpen)
	return nil, nil
}

// retentionCmd enforces the retention settings once: "ingest retention".
func retentionCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, _, err := parse("retention", args, getenv, stderr, nil)
	if err != nil {
		return err
	}
	conn, err := chconn.Open(ctx, cfg.ch, true)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := schema.Ready(ctx, conn); err != nil {
		return fmt.Errorf("retention: %w; run ingest migrate first", err)
	}
	res, err := retention.Apply(ctx, conn, cfg.ops.retention, time.Now())
	for _, c := range res.Changed {
		fmt.Fprintln(stdout, c)
	}
	if err != nil {
		return err
	}
	if len(res.Changed) == 0 {
		fmt.Fprintf(stdout, "retention up to date (%s mode): raw %s, rollup %s, tool sightings folded after %s, complete hours folded within %s\n", res.Mode, cfg.ops.retention.Raw, cfg.ops.retention.Rollup, cfg.ops.retention.Sightings, cfg.ops.retention.FoldRollup)
	}
	return nil
}
