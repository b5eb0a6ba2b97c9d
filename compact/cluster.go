package compact

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcplens/mcplens/schema"
)

// StaleReplicaDelay is the most a replica may lag behind its shard's log
// for a job on a cluster to read from it (max_replica_delay_for_distributed_queries).
// RollupHours and RollupChains fold an hour once its last insert is the
// settle time old (10 minutes in the retention job), so a replica less
// than this behind holds every row of it.
const StaleReplicaDelay = 5 * time.Minute

// Clustered is a DB whose tables are on a ClickHouse cluster (cluster
// mode, docs/scaling.md): each a Distributed table over the replicated
// <name>_local of every node. The jobs of this package and of the
// retention package run on it as on one server, because it
//
//   - sends each ALTER TABLE (the folds' deletions, retention's DROP
//     PARTITION and MODIFY TTL) and OPTIMIZE TABLE (Days) to the _local
//     tables of every node, ON CLUSTER (schema.ClusterForm): the
//     Distributed table holds no rows to change;
//   - writes each INSERT with insert_quorum set to the replicas of a
//     shard, so that a fold's rows are on every replica before its record
//     is written: a reader's Distributed query reads any one replica of a
//     shard, and must never find a fold's record without all of its rows.
//     While a replica is down the inserts fail (TOO_FEW_LIVE_REPLICAS),
//     and the hour stays unfolded, read from the rollup's states and the
//     raw calls as before, until a run after the replica's return;
//   - reads from no replica more than StaleReplicaDelay behind
//     (fallback_to_stale_replicas_for_distributed_queries = 0): a shard
//     whose replicas all lag fails the job rather than let it fold part of
//     an hour.
//
// Other statements pass as they are.
type Clustered struct {
	db       DB
	Cluster  string // the cluster in the servers' remote_servers
	Database string // the database of the tables, which ON CLUSTER statements name
	Replicas int    // the replicas of each shard: the inserts' quorum
}

// NewClustered wraps db, connected to a node of cluster in the tables'
// database. It reads the database and the cluster's replicas per shard from
// that node and fails when the cluster is unknown there or its shards have
// different numbers of replicas (no one quorum fits them all).
func NewClustered(ctx context.Context, db DB, cluster string) (*Clustered, error) {
	var rows []struct {
		Database string `ch:"db"`
		Shards   uint64 `ch:"shards"`
		Min      uint64 `ch:"min_replicas"`
		Max      uint64 `ch:"max_replicas"`
	}
	if err := db.Select(ctx, &rows, clusterShapeSQL, clickhouse.Named("cluster", cluster)); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cluster, err)
	}
	if len(rows) != 1 || rows[0].Shards == 0 {
		return nil, fmt.Errorf("cluster %s: not in the server's system.clusters", cluster)
	}
	r := rows[0]
	if r.Min != r.Max {
		return nil, fmt.Errorf("cluster %s: its shards have %d to %d replicas; the jobs write with one quorum, the replicas of a shard", cluster, r.Min, r.Max)
	}
	return &Clustered{db: db, Cluster: cluster, Database: r.Database, Replicas: int(r.Max)}, nil
}

// clusterShapeSQL reads the current database and the cluster's shards and
// their replicas (system.clusters has a row per replica).
const clusterShapeSQL = `SELECT
  currentDatabase() AS db,
  toUInt64(count()) AS shards,
  toUInt64(min(n)) AS min_replicas,
  toUInt64(max(n)) AS max_replicas
FROM (
  SELECT shard_num, count() AS n
  FROM system.clusters
  WHERE cluster = @cluster
  GROUP BY shard_num
)`

// Select runs query with the reads' replica settings.
func (c *Clustered) Select(ctx context.Context, dest any, query string, args ...any) error {
	return c.db.Select(c.settings(ctx, false), dest, query, args...)
}

// Exec runs query in its cluster form (see Clustered).
func (c *Clustered) Exec(ctx context.Context, query string, args ...any) error {
	switch schema.Verb(query) {
	case "ALTER", "OPTIMIZE":
		q, err := schema.ClusterForm(query, c.Cluster, c.Database)
		if err != nil {
			return err
		}
		return c.db.Exec(ctx, q, args...)
	case "INSERT":
		return c.db.Exec(c.settings(ctx, true), query, args...)
	}
	return c.db.Exec(c.settings(ctx, false), query, args...)
}

// settings adds the reads' replica settings to ctx, and the quorum when
// the statement writes.
func (c *Clustered) settings(ctx context.Context, write bool) context.Context {
	s := clickhouse.Settings{
		"max_replica_delay_for_distributed_queries":          int(StaleReplicaDelay / time.Second),
		"fallback_to_stale_replicas_for_distributed_queries": 0,
	}
	if write {
		s["insert_quorum"] = c.Replicas
	}
	return clickhouse.Context(ctx, clickhouse.WithSettings(s))
}

// SystemRows is the FROM and WHERE of a query over what the system table
// sys (parts, mutations, ...; a fixed name) holds about table: on one
// server the server's rows for it; on a cluster those for its _local twin,
// from one replica of every shard. args bind the WHERE's parameters.
func SystemRows(db DB, sys, table string) (fromWhere string, args []any) {
	if c, ok := db.(*Clustered); ok {
		return "cluster(@sys_cluster, system." + sys + ") WHERE database = @sys_database AND table = @sys_table",
			[]any{clickhouse.Named("sys_cluster", c.Cluster), clickhouse.Named("sys_database", c.Database), clickhouse.Named("sys_table", table+schema.LocalSuffix)}
	}
	return "system." + sys + " WHERE database = currentDatabase() AND table = @sys_table", []any{clickhouse.Named("sys_table", table)}
}

// LocalTable is the table that holds a shard's rows of table: table itself
// on one server, its _local twin on a cluster.
func LocalTable(db DB, table string) string {
	if _, ok := db.(*Clustered); ok {
		return table + schema.LocalSuffix
	}
	return table
}
