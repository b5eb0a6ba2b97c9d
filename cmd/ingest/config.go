package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcplens/mcplens/chconn"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
)

// config is the ingest configuration; flags have environment fallbacks.
type config struct {
	listen          string
	grpcListen      string
	pprofListen     string
	ch              chconn.Config
	rulesFile       string
	defaultTenant   string
	redactDeny      string
	redactAllow     string
	hashOnlyServers string
	maxLineBytes    int
	batch           pipeline.BatchConfig
	http            pipeline.HTTPConfig
	otlp            pipeline.OTLPConfig
	shutdownTimeout time.Duration
	ops             opsConfig   // spool, tokens, retention: operations.go
	tools           toolsConfig // tool definitions and schema validation: tools.go
}

func (c *config) register(fs *flag.FlagSet, getenv func(string) string) {
	c.ch.RegisterFlags(fs, getenv)
	fs.StringVar(&c.listen, "listen", envOr(getenv, "MCPLENS_INGEST_LISTEN", "127.0.0.1:4318"), "HTTP listen address of the receivers (env MCPLENS_INGEST_LISTEN)")
	fs.StringVar(&c.rulesFile, "rules", getenv("MCPLENS_RULES"), "classification rules file (YAML or JSON) applied over the built-in rules (env MCPLENS_RULES; see docs/rules.md)")
	fs.StringVar(&c.defaultTenant, "default-tenant", envOr(getenv, "MCPLENS_DEFAULT_TENANT", "default"), "tenant of captures that name none")
	fs.StringVar(&c.redactDeny, "redact-keys", getenv("MCPLENS_REDACT_KEYS"), "extra comma-separated argument key patterns whose values are redacted (defaults cover password, token, secret, api_key, ...)")
	fs.StringVar(&c.redactAllow, "redact-allow", getenv("MCPLENS_REDACT_ALLOW"), "comma-separated argument keys never redacted")
	fs.StringVar(&c.hashOnlyServers, "hash-only-servers", getenv("MCPLENS_HASH_ONLY_SERVERS"), "comma-separated servers whose argument values are stored only as hashes")
	fs.IntVar(&c.maxLineBytes, "max-line-bytes", 1<<20, "longest accepted NDJSON line; longer lines are rejected with a reason")
	fs.IntVar(&c.batch.BatchSize, "batch-size", 100000, "insert when this many calls are queued; ClickHouse spends less CPU per call on larger inserts (docs/operations.md), at the cost of memory and latency")
	fs.IntVar(&c.batch.Inserts, "inserts", 2, "INSERTs in flight at once; 2 lets ingest encode and send one batch while ClickHouse writes the other")
	fs.DurationVar(&c.batch.FlushEvery, "flush-every", time.Second, "insert at least this often; lower means fresher data and more, smaller inserts")
	fs.DurationVar(&c.batch.FlushIdle, "flush-idle", 100*time.Millisecond, "insert early when no call arrived for this long and at least a tenth of -batch-size is queued, so that the end of a burst is stored at once; 0 disables")
	fs.IntVar(&c.batch.QueueCapacity, "queue-capacity", 300000, "calls held in memory, inserts in flight included (about 600 bytes each, encoded); with the spool, more wait on disk, else receivers answer 503 with Retry-After when it is full")
	fs.Int64Var(&c.http.MaxBodyBytes, "max-body-bytes", 16<<20, "largest request body as sent")
	fs.Int64Var(&c.http.MaxDecompressedBytes, "max-decompressed-bytes", 128<<20, "largest request body after gzip decompression (guards against gzip bombs)")
	fs.StringVar(&c.grpcListen, "grpc-listen", envOr(getenv, "MCPLENS_INGEST_GRPC_LISTEN", "127.0.0.1:4317"), "OTLP/gRPC listen address (env MCPLENS_INGEST_GRPC_LISTEN); empty disables the gRPC receiver")
	fs.StringVar(&c.pprofListen, "pprof-listen", getenv("MCPLENS_PPROF_LISTEN"), "serve: loopback address of the Go profiler (/debug/pprof/ CPU, heap, goroutine profiles; env MCPLENS_PPROF_LISTEN); empty (default) disables it")
	fs.StringVar(&c.otlp.TenantAttribute, "otlp-tenant-attribute", envOr(getenv, "MCPLENS_OTLP_TENANT_ATTRIBUTE", "mcplens.tenant"), "resource attribute that names the tenant of OTLP spans; spans without it get -default-tenant")
	fs.IntVar(&c.otlp.MaxSpans, "otlp-max-spans", 10000, "spans read per OTLP export request; the rest are rejected in the partial-success response")
	fs.IntVar(&c.otlp.MaxAttributeBytes, "otlp-max-attribute-bytes", 64<<10, "longest OTLP string attribute read (arguments, results); longer ones are ignored and counted")
	fs.DurationVar(&c.otlp.PairWindow, "otlp-pair-window", 0, "how long a client or server span is held in memory waiting for the other side of its call; 0 (default) stores every span at once, so an acknowledged span is always durable, and the other side merges into the same row when it arrives; >0 (e.g. 10s) writes one merged row with the server's name; held spans are made durable in the pair log under <spool-dir>/pairs before they are acknowledged, and a restart after a crash holds them again (docs/otel.md, docs/operations.md)")
	fs.IntVar(&c.otlp.PairCapacity, "otlp-pair-capacity", 100000, "spans held for pairing, and stored spans remembered for a late other side, at most each; bounds memory")
	c.otlp.PairMaxBytes = pipeline.DefaultPairMaxBytes
	fs.Func("otlp-pair-max-bytes", "memory of the spans held for pairing and remembered for a late other side, at most, e.g. 32MiB (default 16MiB); the oldest remembered are forgotten first, and past it a span is stored at once instead of held. -memory-limit's default grows with it", func(v string) error {
		n, err := parseBytes(v)
		if err != nil || n <= 0 {
			return fmt.Errorf("want a size such as 32MiB or 1GiB")
		}
		c.otlp.PairMaxBytes = n
		return nil
	})
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGTERM, how long to finish requests and flush queued calls")
	c.ops.register(fs, getenv)
	c.tools.register(fs, getenv)
}

// processor builds the decode + classify stage from the configuration.
func (c *config) processor() (*pipeline.Processor, error) {
	var sets []*classify.RuleSet
	if c.rulesFile != "" {
		rs, err := classify.LoadRules(c.rulesFile)
		if err != nil {
			return nil, err
		}
		sets = append(sets, rs)
	}
	cl, err := classify.New(sets...)
	if err != nil {
		return nil, err
	}
	red, err := pipeline.NewRedactor(pipeline.RedactConfig{
		Deny:            splitList(c.redactDeny),
		Allow:           splitList(c.redactAllow),
		HashOnlyServers: splitList(c.hashOnlyServers),
	})
	if err != nil {
		return nil, err
	}
	c.http.DefaultTenant = c.defaultTenant
	return &pipeline.Processor{
		Decode:     pipeline.DecodeOptions{DefaultTenant: c.defaultTenant, MaxLineBytes: c.maxLineBytes, Redactor: red},
		Classifier: cl,
	}, nil
}

func parse(name string, args []string, getenv func(string) string, stderr io.Writer, extra func(*flag.FlagSet)) (*config, *flag.FlagSet, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("ingest "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.register(fs, getenv)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if cfg.batch.BatchSize < 1 || cfg.batch.QueueCapacity < cfg.batch.BatchSize {
		return nil, nil, fmt.Errorf("-queue-capacity (%d) must be at least -batch-size (%d) and both positive", cfg.batch.QueueCapacity, cfg.batch.BatchSize)
	}
	if cfg.batch.Inserts < 1 || cfg.batch.Inserts > 16 {
		return nil, nil, fmt.Errorf("-inserts (%d) must be between 1 and 16", cfg.batch.Inserts)
	}
	if err := cfg.ops.validate(cfg.http.MaxDecompressedBytes, cfg.ch.Cluster); err != nil {
		return nil, nil, err
	}
	return cfg, fs, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}
