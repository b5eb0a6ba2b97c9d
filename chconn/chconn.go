// Package chconn opens the ClickHouse connection that cmd/ingest and cmd/api
// share: its flags (with environment fallbacks), validation and dialing.
package chconn

import (
	"context"
	"flag"
	"fmt"
	"regexp"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Config is where ClickHouse is and who we are there.
type Config struct {
	Addr        string
	Database    string
	User        string
	Password    string
	DialTimeout time.Duration
	ReadTimeout time.Duration
}

// RegisterFlags adds the connection flags to fs; getenv supplies defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet, getenv func(string) string) {
	fs.StringVar(&c.Addr, "clickhouse-addr", envOr(getenv, "CLICKHOUSE_ADDR", "127.0.0.1:9000"), "ClickHouse native protocol address host:port (env CLICKHOUSE_ADDR)")
	fs.StringVar(&c.Database, "clickhouse-database", envOr(getenv, "CLICKHOUSE_DATABASE", "mcplens"), "database holding the mcplens tables; created by migrations when missing (env CLICKHOUSE_DATABASE)")
	fs.StringVar(&c.User, "clickhouse-user", envOr(getenv, "CLICKHOUSE_USER", "default"), "ClickHouse user (env CLICKHOUSE_USER)")
	fs.StringVar(&c.Password, "clickhouse-password", getenv("CLICKHOUSE_PASSWORD"), "ClickHouse password (env CLICKHOUSE_PASSWORD; prefer the env variable: flags show in ps)")
	fs.DurationVar(&c.DialTimeout, "clickhouse-dial-timeout", 5*time.Second, "timeout to connect to ClickHouse")
	fs.DurationVar(&c.ReadTimeout, "clickhouse-read-timeout", 60*time.Second, "timeout for one ClickHouse answer; bounds slow inserts and queries")
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// Validate checks the settings before any dialing.
func (c *Config) Validate() error {
	if c.Addr == "" {
		return fmt.Errorf("-clickhouse-addr is empty")
	}
	if !identifier.MatchString(c.Database) {
		return fmt.Errorf("-clickhouse-database %q: use letters, digits and _ (at most 64)", c.Database)
	}
	return nil
}

// String describes the connection without its password.
func (c *Config) String() string {
	return fmt.Sprintf("clickhouse://%s@%s/%s", c.User, c.Addr, c.Database)
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
		err = admin.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+c.Database) // identifier validated above
		admin.Close()
		if err != nil {
			return nil, fmt.Errorf("create database %s: %w", c.Database, err)
		}
	}
	return dial(ctx, c, c.Database)
}

func dial(ctx context.Context, c Config, database string) (driver.Conn, error) {
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{c.Addr},
		Auth:        clickhouse.Auth{Database: database, Username: c.User, Password: c.Password},
		DialTimeout: c.DialTimeout,
		ReadTimeout: c.ReadTimeout,
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
