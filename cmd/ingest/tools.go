package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/chconn"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/schema"
)

// toolsConfig holds the settings of tool-definition capture and schema
// validation (docs/schemas.md).
type toolsConfig struct {
	enabled bool
	cfg     pipeline.ToolsConfig
}

func (t *toolsConfig) register(fs *flag.FlagSet, getenv func(string) string) {
	enabled, err := strconv.ParseBool(envOr(getenv, "MCPLENS_VALIDATE_SCHEMAS", "true"))
	fs.BoolVar(&t.enabled, "validate-schemas", err != nil || enabled, "capture tool definitions (tools/list lines and spans, POST /v1/tools) and validate every call's arguments and structured result against the definition in force (env MCPLENS_VALIDATE_SCHEMAS; docs/schemas.md)")
	fs.IntVar(&t.cfg.QueueCapacity, "tool-queue-capacity", 100000, "schema violation rows held in memory while ClickHouse is slow or down; more are dropped and counted (mcplens_tool_rows_dropped_total)")
	fs.DurationVar(&t.cfg.SightingEvery, "tool-sighting-every", time.Hour, "write a sighting of an unchanged tool definition at most this often per process; lower keeps last_seen fresher at the cost of more rows (changes are always written)")
	fs.DurationVar(&t.cfg.Refresh, "tool-refresh", time.Minute, "reload the definitions other ingest processes captured this often; 0 loads them only at start")
}

// open returns the Tools stage on conn with its catalog loaded, or nil
// when -validate-schemas is off.
func (t *toolsConfig) open(ctx context.Context, conn driver.Conn, m *pipeline.Metrics, reg prometheus.Registerer, log *slog.Logger) (*pipeline.Tools, error) {
	if !t.enabled {
		return nil, nil
	}
	tl := pipeline.NewTools(pipeline.NewWriter(conn, m), conn, t.cfg, reg, log)
	if err := tl.Load(ctx); err != nil {
		return nil, err
	}
	return tl, nil
}

// toolsCmd records one server's tool list: "ingest tools [flags] FILE|-".
// FILE holds what POST /v1/tools takes: {"tenant","server","time","tools":
// [...]}, a bare tools/list result, or a JSON-RPC response with one.
func toolsCmd(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	var tenant, server, at string
	cfg, fs, err := parse("tools", args, getenv, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&tenant, "tenant", "", "tenant of the tools when the file names none (default: -default-tenant)")
		fs.StringVar(&server, "server", "", "MCP server of the tools when the file names none")
		fs.StringVar(&at, "time", "", "RFC 3339 time the tools were listed when the file gives none (default: now)")
	})
	if err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("tools needs one FILE argument, or - for stdin")
	}
	in, name := stdin, fs.Arg(0)
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("tools: %w", err)
		}
		defer f.Close()
		in = f
	}
	body, err := io.ReadAll(io.LimitReader(in, cfg.http.MaxDecompressedBytes+1))
	if err != nil {
		return fmt.Errorf("tools %s: %w", name, err)
	}
	if int64(len(body)) > cfg.http.MaxDecompressedBytes {
		return fmt.Errorf("tools %s: larger than -max-decompressed-bytes (%d)", name, cfg.http.MaxDecompressedBytes)
	}
	when := time.Now()
	if at != "" {
		if when, err = time.Parse(time.RFC3339Nano, at); err != nil {
			return fmt.Errorf("-time: %w", err)
		}
	}
	decode := pipeline.DecodeOptions{DefaultTenant: cfg.defaultTenant}
	defs, err := pipeline.ParseToolList(body, tenant, server, when, &decode)
	if err != nil {
		return fmt.Errorf("tools %s: %w", name, err)
	}
	conn, err := chconn.Open(ctx, cfg.ch, true)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := schema.ApplyCluster(ctx, conn, cfg.ch.Cluster); err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	cfg.tools.enabled = true
	tl, err := cfg.tools.open(ctx, conn, pipeline.NewMetrics(reg), reg, slog.New(slog.NewJSONHandler(stderr, nil)))
	if err != nil {
		return err
	}
	n := tl.Observe(defs, pipeline.ToolSourceAPI)
	if err := tl.Drain(ctx); err != nil {
		return fmt.Errorf("tools %s: %w", name, err)
	}
	fmt.Fprintf(stdout, "tools: recorded %d definitions of server %s (tenant %s) seen at %s\n",
		n, defs[0].Server, defs[0].Tenant, time.UnixMilli(defs[0].SeenMs).UTC().Format(time.RFC3339))
	return nil
}
