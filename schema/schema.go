// Package schema owns the ClickHouse tables of mcplens as numbered, idempotent
// .sql files (one statement each) and applies them in name order.
//
// The files run unchanged on ClickHouse 18.16 and on modern servers. The one
// engine difference is LowCardinality: servers older than 19.3 accept it in DDL
// only with allow_experimental_low_cardinality_type=1, a setting modern servers
// reject, so Apply sends it with DDL statements to old servers only.
//
// On a ClickHouse cluster, ApplyCluster runs the same files translated by
// cluster.go: replicated local tables, Distributed tables over them, ON
// CLUSTER (docs/scaling.md).
package schema

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

//go:embed *.sql
var files embed.FS

// DB is the part of a ClickHouse connection that Apply needs. clickhouse-go's
// driver.Conn satisfies it, and so does the in-process engine used in tests.
type DB interface {
	Exec(ctx context.Context, query string, args ...any) error
	Select(ctx context.Context, dest any, query string, args ...any) error
}

// Selecter is the read half of DB.
type Selecter interface {
	Select(ctx context.Context, dest any, query string, args ...any) error
}

// Migration is one numbered schema file.
type Migration struct {
	Version uint32
	Name    string
	SQL     string
}

// Migrations returns the embedded migrations in version order.
func Migrations() ([]Migration, error) {
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	sort.Strings(names)
	out := make([]Migration, 0, len(names))
	for _, n := range names {
		num, _, ok := strings.Cut(n, "_")
		v, err := strconv.ParseUint(num, 10, 32)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number and '_'", n)
		}
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", n, err)
		}
		out = append(out, Migration{Version: uint32(v), Name: n, SQL: string(b)})
	}
	return out, nil
}

// Latest is the highest migration version; /readyz compares it with the database.
func Latest() uint32 {
	ms, err := Migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// Ready reports nil when every embedded migration is recorded as applied.
func Ready(ctx context.Context, db Selecter) error {
	done, err := AppliedVersions(ctx, db)
	if err != nil {
		return err
	}
	ms, err := Migrations()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if !done[m.Version] {
			return fmt.Errorf("migration %s not applied: run `ingest migrate` or start ingest", m.Name)
		}
	}
	return nil
}

// Apply runs every migration not yet recorded in schema_migrations, in order,
// and records it. Each statement is idempotent (a column that a migration
// adds is looked for first; see Exec), so a crash between a statement and
// its record is repaired by the next Apply. It returns the applied names.
func Apply(ctx context.Context, db DB) ([]string, error) {
	return ApplyCluster(ctx, db, "")
}

// ApplyCluster is Apply in cluster mode when cluster is not empty: each
// migration runs as the ON CLUSTER statements of ClusterStatements, in the
// connection's database on every node of cluster, and is recorded in the
// Distributed schema_migrations. With an empty cluster it is Apply.
func ApplyCluster(ctx context.Context, db DB, cluster string) ([]string, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	ddlCtx, err := DDLContext(ctx, db)
	if err != nil {
		return nil, err
	}
	done, err := AppliedVersions(ctx, db)
	if err != nil {
		return nil, err
	}
	stmts := make([][]string, len(ms))
	pending := false
	for i, m := range ms {
		stmts[i] = []string{m.SQL}
		pending = pending || !done[m.Version]
	}
	recordCtx := ctx
	if cluster != "" && pending {
		if stmts, err = clusterPlan(ctx, db, ms, cluster); err != nil {
			return nil, err
		}
		// The record must be on its shard before the next Apply reads it.
		recordCtx = clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"insert_distributed_sync": 1}))
	}
	var applied []string
	for i, m := range ms {
		if done[m.Version] {
			continue
		}
		suffix := ""
		if cluster != "" {
			suffix = LocalSuffix // the Distributed table is made again after it
		}
		has, err := hasAddedColumn(ctx, db, m, suffix)
		if err != nil {
			return applied, err
		}
		for _, stmt := range stmts[i] {
			if has && isAlter(stmt) {
				continue // a crash after the ALTER, before its record
			}
			if err := db.Exec(ddlCtx, stmt); err != nil {
				return applied, fmt.Errorf("migration %s: %w", m.Name, err)
			}
		}
		if err := record(recordCtx, db, m); err != nil {
			return applied, err
		}
		applied = append(applied, m.Name)
	}
	if cluster != "" && len(applied) > 0 {
		if err := waitRecorded(ctx, db, ms); err != nil {
			return applied, err
		}
	}
	return applied, nil
}

// waitRecorded waits until the Distributed schema_migrations shows every
// migration of ms as applied, in 20 reads in a row. A record reaches one
// replica of its shard at once and the others by replication, and a read
// through the Distributed table may ask any of them: without the wait, a
// Ready right after the last migration could miss its record.
func waitRecorded(ctx context.Context, db DB, ms []Migration) error {
	deadline := time.Now().Add(30 * time.Second)
	for seen := 0; seen < 20; {
		done, err := AppliedVersions(ctx, db)
		if err != nil {
			return err
		}
		missing := ""
		for _, m := range ms {
			if !done[m.Version] {
				missing = m.Name
				break
			}
		}
		if missing == "" {
			seen++
		} else {
			seen = 0
			if time.Now().After(deadline) {
				return fmt.Errorf("cluster mode: the record of migration %s is not visible on every replica of schema_migrations after 30 s", missing)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// clusterPlan returns the cluster statements of ms for the connection's
// database. On servers older than 19.3 it first checks that LowCardinality
// is allowed by the settings profile: ON CLUSTER statements run in each
// node's DDL worker with the server's default profile, so the setting
// DDLContext sends with the statement does not reach them.
func clusterPlan(ctx context.Context, db DB, ms []Migration, cluster string) ([][]string, error) {
	var rows []struct {
		Database string `ch:"db"`
		Version  string `ch:"v"`
	}
	if err := db.Select(ctx, &rows, "SELECT currentDatabase() AS db, version() AS v"); err != nil {
		return nil, fmt.Errorf("cluster mode: current database: %w", err)
	}
	if len(rows) != 1 {
		return nil, fmt.Errorf("cluster mode: current database: %d rows", len(rows))
	}
	if olderThan193(rows[0].Version) {
		var lc []struct {
			V string `ch:"v"`
		}
		err := db.Select(ctx, &lc, "SELECT value AS v FROM system.settings WHERE name = 'allow_experimental_low_cardinality_type'")
		if err != nil {
			return nil, fmt.Errorf("cluster mode: read allow_experimental_low_cardinality_type: %w", err)
		}
		if len(lc) != 1 || lc[0].V != "1" {
			return nil, fmt.Errorf("cluster mode on ClickHouse %s: ON CLUSTER DDL runs with the servers' default profile, which must allow LowCardinality: "+
				"add <allow_experimental_low_cardinality_type>1</allow_experimental_low_cardinality_type> to the default profile in users.xml "+
				"of every server and restart them (docs/scaling.md)", rows[0].Version)
		}
	}
	return ClusterStatements(ms, cluster, rows[0].Database)
}

// Exec runs m's statement once more, as Apply would on a database that has
// not recorded it: idempotent, so that a crash between a statement and its
// record is repaired by the next Apply. A migration that adds a column
// (ALTER TABLE t ADD COLUMN c ...) is skipped when t already has c: 18.16
// has no ADD COLUMN IF NOT EXISTS, and modern servers refuse a duplicate
// column too.
func Exec(ctx context.Context, db DB, m Migration) error {
	has, err := hasAddedColumn(ctx, db, m, "")
	if err != nil || has {
		return err
	}
	if err := db.Exec(ctx, m.SQL); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	return nil
}

// addColumn matches a migration that adds a column: its comment lines,
// then ALTER TABLE t ADD COLUMN c. Such a migration adds that one column
// and nothing else: only c is looked for.
var addColumn = regexp.MustCompile(`(?is)^\s*(?:--[^\n]*\n\s*)*ALTER\s+TABLE\s+([a-z_][a-z0-9_]*)\s+ADD\s+COLUMN\s+([a-z_][a-z0-9_]*)\s`)

// hasAddedColumn reports whether m adds a column that its table (with
// suffix: the local table in cluster mode), in the connection's database,
// already has.
func hasAddedColumn(ctx context.Context, db Selecter, m Migration, suffix string) (bool, error) {
	sub := addColumn.FindStringSubmatch(m.SQL)
	if sub == nil {
		return false, nil
	}
	sub[1] += suffix
	var n []struct {
		N uint64 `ch:"n"`
	}
	err := db.Select(ctx, &n, "SELECT count() AS n FROM system.columns WHERE database = currentDatabase() AND table = @table AND name = @column",
		clickhouse.Named("table", sub[1]), clickhouse.Named("column", sub[2]))
	if err != nil {
		return false, fmt.Errorf("migration %s: look for column %s.%s: %w", m.Name, sub[1], sub[2], err)
	}
	return len(n) == 1 && n[0].N > 0, nil
}

// isAlter reports whether stmt, past its comment lines, is an ALTER.
func isAlter(stmt string) bool {
	for {
		stmt = strings.TrimSpace(stmt)
		if !strings.HasPrefix(stmt, "--") {
			break
		}
		_, stmt, _ = strings.Cut(stmt, "\n")
	}
	return len(stmt) >= 5 && strings.EqualFold(stmt[:5], "ALTER")
}

// AppliedVersions reads schema_migrations; a missing table means none.
func AppliedVersions(ctx context.Context, db Selecter) (map[uint32]bool, error) {
	var exists []struct {
		N uint64 `ch:"n"`
	}
	if err := db.Select(ctx, &exists, "SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = 'schema_migrations'"); err != nil {
		return nil, fmt.Errorf("look for schema_migrations: %w", err)
	}
	done := map[uint32]bool{}
	if len(exists) == 0 || exists[0].N == 0 {
		return done, nil
	}
	var rows []struct {
		Version uint32 `ch:"version"`
	}
	if err := db.Select(ctx, &rows, "SELECT DISTINCT version AS version FROM schema_migrations"); err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	for _, r := range rows {
		done[r.Version] = true
	}
	return done, nil
}

// record inserts the bookkeeping row. It goes through Exec with bound values:
// the statement is tiny and runs once per migration. 18.16 hangs on
// "INSERT ... VALUES" over the native protocol, so this uses INSERT ... SELECT.
func record(ctx context.Context, db DB, m Migration) error {
	err := db.Exec(ctx, "INSERT INTO schema_migrations (version, name, applied_at) SELECT toUInt32(@version), @name, toDateTime(@at, 'UTC')",
		clickhouse.Named("version", int64(m.Version)), clickhouse.Named("name", m.Name), clickhouse.Named("at", time.Now().Unix()))
	if err != nil {
		return fmt.Errorf("record migration %s: %w", m.Name, err)
	}
	return nil
}

// DDLContext returns ctx with the settings DDL needs on db's server: the
// LowCardinality setting for servers older than 19.3, nothing otherwise.
func DDLContext(ctx context.Context, db Selecter) (context.Context, error) {
	var v []struct {
		V string `ch:"v"`
	}
	if err := db.Select(ctx, &v, "SELECT version() AS v"); err != nil {
		return nil, fmt.Errorf("server version: %w", err)
	}
	if len(v) == 0 || !olderThan193(v[0].V) {
		return ctx, nil
	}
	return clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{
		"allow_experimental_low_cardinality_type": 1,
	})), nil
}

// olderThan193 reports whether a version string like "18.16.1" is below 19.3.
func olderThan193(v string) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return major < 19 || (major == 19 && minor < 3)
}
