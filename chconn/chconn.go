// Package chconn opens the ClickHouse connection that cmd/ingest and cmd/api
// share: its flags (with environment fallbacks), validation and dialing.
//
// With a cluster name (-clickhouse-cluster) the connection is in cluster
// mode (docs/scaling.md): the database is created ON CLUSTER, migrations
// build replicated local tables with Distributed tables over them
// (schema.ApplyCluster), and every INSERT into a Distributed table returns
// only once each shard has the rows (see dial).
package chconn

import (
	"context"
	"flag"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Config is where ClickHouse is and who we are there.
type Config struct {
	Addr        string // host:port, or a comma-separated list tried in order
	Database    string
	Cluster     string // <remote_servers> cluster of cluster mode; "" is a single server
	User        string
	Password    string
	DialTimeout time.Duration
	ReadTimeout time.Duration
	// Compression of the data blocks both ways: "none", "lz4" or "zstd"
	// (-clickhouse-compression).
	Compression string
}

// compressions are the -clickhouse-compression values.
var compressions = map[string]clickhouse.CompressionMethod{
	"none": clickhouse.CompressionNone,
	"lz4":  clickhouse.CompressionLZ4,
	"zstd": clickhouse.CompressionZSTD,
}

// RegisterFlags adds the connection flags to fs; getenv supplies defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet, getenv func(string) string) {
	fs.StringVar(&c.Addr, "clickhouse-addr", envOr(getenv, "CLICKHOUSE_ADDR", "127.0.0.1:9000"), "ClickHouse native protocol address host:port, or a comma-separated list: new connections go to the first that answers (env CLICKHOUSE_ADDR)")
	fs.StringVar(&c.Cluster, "clickhouse-cluster", getenv("CLICKHOUSE_CLUSTER"), "cluster name from the servers' <remote_servers>: migrations run ON CLUSTER and create replicated tables sharded by session behind Distributed tables; empty means one server (env CLICKHOUSE_CLUSTER; docs/scaling.md)")
	fs.StringVar(&c.Database, "clickhouse-database", envOr(getenv, "CLICKHOUSE_DATABASE", "mcplens"), "database holding the mcplens tables; created by migrations when missing (env CLICKHOUSE_DATABASE)")
	fs.StringVar(&c.User, "clickhouse-user", envOr(getenv, "CLICKHOUSE_USER", "default"), "ClickHouse user (env CLICKHOUSE_USER)")
	fs.StringVar(&c.Password, "clickhouse-password", getenv("CLICKHOUSE_PASSWORD"), "ClickHouse password (env CLICKHOUSE_PASSWORD; prefer the env variable: flags show in ps)")
	fs.DurationVar(&c.DialTimeout, "clickhouse-dial-timeout", 5*time.Second, "timeout to connect to ClickHouse")
	fs.DurationVar(&c.ReadTimeout, "clickhouse-read-timeout", 60*time.Second, "timeout for one ClickHouse answer; bounds slow inserts and queries")
	fs.StringVar(&c.Compression, "clickhouse-compression", envOr(getenv, "CLICKHOUSE_COMPRESSION", "none"), "compression of inserted and queried data on the wire: none, lz4 or zstd; lz4 sends about a fifth of the bytes for some client CPU, worth it when ClickHouse is across a network, not on the same machine (env CLICKHOUSE_COMPRESSION; docs/operations.md)")
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// Validate checks the settings before any dialing.
func (c *Config) Validate() error {
	for _, a := range c.addrs() {
		if a == "" {
			return fmt.Errorf("-clickhouse-addr %q: empty address", c.Addr)
		}
	}
	if !identifier.MatchString(c.Database) {
		return fmt.Errorf("-clickhouse-database %q: use letters, digits and _ (at most 64)", c.Database)
	}
	if c.Cluster != "" && !identifier.MatchString(c.Cluster) {
		return fmt.Errorf("-clickhouse-cluster %q: use letters, digits and _ (at most 64)", c.Cluster)
	}
	if _, ok := compressions[c.compression()]; !ok {
		return fmt.Errorf("-clickhouse-compression %q: use none, lz4 or zstd", c.Compression)
	}
	return nil
}

// compression is Compression with "" read as none (a Config built in code).
func (c *Config) compression() string {
	if c.Compression == "" {
		return "none"
	}
	return c.Compression
}

func (c *Config) addrs() []string {
	out := strings.Split(c.Addr, ",")
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

// String describes the connection without its password.
func (c *Config) String() string {
	s := fmt.Sprintf("clickhouse://%s@%s/%s", c.User, c.Addr, c.Database)
	if c.Cluster != "" {
		s += " on cluster " + c.Cluster
	}
	return s
}

// Open dials ClickHouse, first creating the database when create is true
// (migrations do; the API never creates anything).
func Open(ctx context.Context, c Config, create bool) (driver.Conn, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if create {
		admin, err := dial(ctx, c, "default")
		if err != nil {
			return nil, err
		}
		stmt := "CREATE DATABASE IF NOT EXISTS " + c.Database // identifiers validated above
		if c.Cluster != "" {
			stmt += " ON CLUSTER " + c.Cluster
		}
		err = admin.Exec(ctx, stmt)
		admin.Close()
		if err != nil {
			return nil, fmt.Errorf("create database %s: %w", c.Database, err)
		}
	}
	return dial(ctx, c, c.Database)
}

// dial opens a connection pool. In cluster mode every statement carries
// two insert settings (the others ignore them):
//
//   - insert_distributed_sync=1 (its 18.16 name, an alias of
//     distributed_foreground_insert on modern servers): an INSERT into a
//     Distributed table is acknowledged only after every shard it touches
//     has its rows, so the spool never commits calls that sit in a
//     Distributed table's local queue.
//   - insert_deduplicate=0: a retried batch is inserted again, as on a
//     single server, and the idempotent keys make the copy harmless. With
//     block deduplication a replicated table drops the retried block and
//     ClickHouse 18.16 then skips the materialized views too, so a batch
//     whose first attempt failed after its calls and before its rollup
//     rows were written would never reach calls_5m.
func dial(ctx context.Context, c Config, database string) (driver.Conn, error) {
	var settings clickhouse.Settings
	if c.Cluster != "" {
		settings = clickhouse.Settings{"insert_distributed_sync": 1, "insert_deduplicate": 0}
	}
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:        c.addrs(),
		Auth:        clickhouse.Auth{Database: database, Username: c.User, Password: c.Password},
		DialTimeout: c.DialTimeout,
		ReadTimeout: c.ReadTimeout,
		Settings:    settings,
		Compression: &clickhouse.Compression{Method: compressions[c.compression()]},
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", c.String(), err)
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("ping %s: %w", c.String(), err)
	}
	return conn, nil
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}
