// Command ingest receives MCP tools/call traces, classifies each call and
// writes it to ClickHouse.
//
//	ingest [serve] [flags]        receivers (POST /v1/calls, /v1/traces, /v1/tools, OTLP/gRPC), /metrics, /healthz, /readyz
//	ingest migrate [flags]        apply the schema migrations and exit
//	ingest replay [flags] FILE|-  ingest an NDJSON capture file (or stdin) and exit
//	ingest sample [flags]         write realistic sample traffic as NDJSON to stdout
//	ingest rules check FILE       validate a classification rules file
//	ingest retention [flags]      drop data older than -retention / -rollup-retention and exit
//	ingest tools [flags] FILE|-   record one server's tool list (as POST /v1/tools takes it) and exit
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "ingest:", err)
		os.Exit(1)
	}
}

// run dispatches the subcommand. It touches no process globals, so tests can
// call it.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, args, getenv, stderr)
	case "migrate":
		return migrate(ctx, args, getenv, stdout, stderr)
	case "replay":
		return replay(ctx, args, getenv, stdin, stderr)
	case "sample":
		return sample(args, stdout, stderr)
	case "rules":
		return rules(args, stdout)
	case "retention":
		return retentionCmd(ctx, args, getenv, stdout, stderr)
	case "tools":
		return toolsCmd(ctx, args, getenv, stdin, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, usage)
}

const usage = `usage:
  ingest [serve] [flags]        receivers (POST /v1/calls, /v1/traces, /v1/tools, OTLP/gRPC), /metrics, /healthz, /readyz
  ingest migrate [flags]        apply the schema migrations and exit
  ingest replay [flags] FILE|-  ingest an NDJSON capture file (or stdin) and exit
  ingest sample [flags]         write realistic sample traffic as NDJSON to stdout
  ingest rules check FILE       validate a classification rules file
  ingest retention [flags]      drop data older than -retention / -rollup-retention and exit
  ingest tools [flags] FILE|-   record one server's tool list (as POST /v1/tools takes it) and exit
Run "ingest COMMAND -h" for the flags of a command.`
