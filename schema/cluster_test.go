package schema_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/schema"
)

// TestClusterStatements pins the translation of single-server DDL to
// cluster DDL, one rule per row. Its behaviour on a real cluster is tested
// in clustertest.
func TestClusterStatements(t *testing.T) {
	const table = "CREATE TABLE IF NOT EXISTS t (\n  a String,\n  v Int64\n) ENGINE = ReplacingMergeTree(v)\nORDER BY (a, v)"
	tests := []struct {
		name  string
		files []string // the migrations, in order; the last one is checked
		want  []string
	}{
		{
			"a table becomes a replicated local table and a Distributed table sharded by its ORDER BY",
			[]string{table},
			[]string{
				"CREATE TABLE IF NOT EXISTS db.t_local ON CLUSTER c (\n  a String,\n  v Int64\n) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/db/t', '{replica}', v)\nORDER BY (a, v)",
				"CREATE TABLE IF NOT EXISTS db.t ON CLUSTER c AS db.t_local ENGINE = Distributed(c, db, t_local, cityHash64(a, v))",
			},
		},
		{
			"calls is sharded by session; an engine without arguments gets the path and replica only",
			[]string{"-- the calls\nCREATE TABLE calls (tenant String, server String, session_key String, call_id UInt64) ENGINE = MergeTree() ORDER BY (tenant, server, session_key, call_id);"},
			[]string{
				"-- the calls\nCREATE TABLE db.calls_local ON CLUSTER c (tenant String, server String, session_key String, call_id UInt64) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/db/calls', '{replica}') ORDER BY (tenant, server, session_key, call_id)",
				"CREATE TABLE IF NOT EXISTS db.calls ON CLUSTER c AS db.calls_local ENGINE = Distributed(c, db, calls_local, cityHash64(tenant, server, session_key))",
			},
		},
		{
			"a table ordered by an expression is sharded at random",
			[]string{"CREATE TABLE t (a String) ENGINE = MergeTree ORDER BY tuple()"},
			[]string{
				"CREATE TABLE db.t_local ON CLUSTER c (a String) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/db/t', '{replica}') ORDER BY tuple()",
				"CREATE TABLE IF NOT EXISTS db.t ON CLUSTER c AS db.t_local ENGINE = Distributed(c, db, t_local, rand())",
			},
		},
		{
			"a materialized view reads and writes local tables; a column named like a table stays",
			[]string{table, "CREATE TABLE r (a String, t AggregateFunction(uniqExact, Int64)) ENGINE = AggregatingMergeTree() ORDER BY a",
				"CREATE MATERIALIZED VIEW IF NOT EXISTS r_mv TO r AS SELECT a, uniqExactState(v) AS t FROM t GROUP BY a"},
			[]string{"CREATE MATERIALIZED VIEW IF NOT EXISTS db.r_mv ON CLUSTER c TO db.r_local AS SELECT a, uniqExactState(v) AS t FROM db.t_local GROUP BY a"},
		},
		{
			"a view reads the Distributed tables, in subqueries too",
			[]string{table, "CREATE VIEW IF NOT EXISTS w AS SELECT a FROM (SELECT a FROM t FINAL) WHERE a IN (SELECT a FROM t)"},
			[]string{"CREATE VIEW IF NOT EXISTS db.w ON CLUSTER c AS SELECT a FROM (SELECT a FROM db.t FINAL) WHERE a IN (SELECT a FROM db.t)"},
		},
		{
			"ALTER applies every command to the local table and a column command makes the Distributed one again",
			[]string{table, "ALTER TABLE t ADD COLUMN b UInt8 DEFAULT 0 AFTER a, MODIFY TTL toDateTime(v) + INTERVAL 1 DAY, COMMENT COLUMN a 'x, y'"},
			[]string{
				"ALTER TABLE db.t_local ON CLUSTER c ADD COLUMN b UInt8 DEFAULT 0 AFTER a, MODIFY TTL toDateTime(v) + INTERVAL 1 DAY, COMMENT COLUMN a 'x, y'",
				"DROP TABLE IF EXISTS db.t ON CLUSTER c",
				"CREATE TABLE IF NOT EXISTS db.t ON CLUSTER c AS db.t_local ENGINE = Distributed(c, db, t_local, cityHash64(a, v))",
			},
		},
		{
			"ALTER without a column command leaves the Distributed table alone",
			[]string{table, "ALTER TABLE t MODIFY TTL toDateTime(v) + INTERVAL 1 DAY"},
			[]string{"ALTER TABLE db.t_local ON CLUSTER c MODIFY TTL toDateTime(v) + INTERVAL 1 DAY"},
		},
		{
			"DROP TABLE of a view an earlier migration created drops it on every node",
			[]string{table, "CREATE TABLE r (a String) ENGINE = MergeTree ORDER BY a",
				"CREATE MATERIALIZED VIEW IF NOT EXISTS r_mv TO r AS SELECT a FROM t",
				"-- replaced\nDROP TABLE IF EXISTS r_mv;"},
			[]string{"-- replaced\nDROP TABLE IF EXISTS db.r_mv ON CLUSTER c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := statements(t, tt.files)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n;\n"), strings.Join(tt.want, "\n;\n"))
			}
		})
	}
}

func statements(t *testing.T, files []string) []string {
	t.Helper()
	var ms []schema.Migration
	for i, f := range files {
		ms = append(ms, schema.Migration{Version: uint32(i + 1), Name: "m.sql", SQL: f})
	}
	out, err := schema.ClusterStatements(ms, "c", "db")
	if err != nil {
		t.Fatal(err)
	}
	return out[len(out)-1]
}

// TestClusterStatementsRejectWhatHasNoClusterForm lists the statements
// cluster mode refuses, each with the reason it gives.
func TestClusterStatementsRejectWhatHasNoClusterForm(t *testing.T) {
	tests := []struct {
		sql    string
		reason string
	}{
		{"CREATE TABLE t (a String) ENGINE = Log", "no replicated form"},
		{"CREATE TABLE t (a String) ENGINE = ReplicatedMergeTree('/p', 'r') ORDER BY a", "no replicated form"},
		{"CREATE TABLE mcplens.t (a String) ENGINE = MergeTree ORDER BY a", "without a database"},
		{"CREATE MATERIALIZED VIEW v ENGINE = MergeTree ORDER BY a AS SELECT 1 AS a", "want TO"},
		{"CREATE MATERIALIZED VIEW v TO nowhere AS SELECT 1 AS a", "not a table created"},
		{"ALTER TABLE nowhere ADD COLUMN a String", "not a table created"},
		{"INSERT INTO t (a) SELECT 'x'", "cannot translate"},
		{"CREATE TABLE t (a String) ENGINE = MergeTree PRIMARY KEY a", "no ORDER BY"},
		{"DROP TABLE IF EXISTS nowhere", "not a view created"},
	}
	for _, tt := range tests {
		_, err := schema.ClusterStatements([]schema.Migration{{Version: 1, Name: "m.sql", SQL: tt.sql}}, "c", "db")
		if err == nil || !strings.Contains(err.Error(), tt.reason) || !strings.Contains(err.Error(), "m.sql") {
			t.Errorf("%s: got error %v, want one naming m.sql and %q", tt.sql, err, tt.reason)
		}
	}
}

// TestClusterStatementsDropOnlyViews: a table is two tables in cluster
// mode (and its data), a view dropped once is gone, and a DROP names one
// view and nothing else.
func TestClusterStatementsDropOnlyViews(t *testing.T) {
	const table = "CREATE TABLE t (a String) ENGINE = MergeTree ORDER BY a"
	const view = "CREATE VIEW v AS SELECT a FROM t"
	tests := []struct {
		files  []string
		reason string
	}{
		{[]string{table, "DROP TABLE t"}, "not a view created"},
		{[]string{table, view, "DROP TABLE v", "DROP TABLE IF EXISTS v"}, "not a view created"},
		{[]string{table, view, "DROP TABLE v SYNC"}, `unexpected "SYNC"`},
	}
	for _, tt := range tests {
		var ms []schema.Migration
		for i, f := range tt.files {
			ms = append(ms, schema.Migration{Version: uint32(i + 1), Name: fmt.Sprintf("m%d.sql", i+1), SQL: f})
		}
		_, err := schema.ClusterStatements(ms, "c", "db")
		last := ms[len(ms)-1].Name
		if err == nil || !strings.Contains(err.Error(), tt.reason) || !strings.Contains(err.Error(), last) {
			t.Errorf("%q: got error %v, want one naming %s and %q", tt.files, err, last, tt.reason)
		}
	}
}

// TestEveryMigrationHasClusterDDL translates every embedded migration,
// so that a new file cluster mode cannot express fails here, and checks
// that each statement parses on the modern engine (chDB). ClickHouse 18.16
// runs them in clustertest, on a real cluster.
func TestEveryMigrationHasClusterDDL(t *testing.T) {
	ms, err := schema.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	stmts, err := schema.ClusterStatements(ms, "mcplens", "mcplens")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range chtest.Engines(t) {
		if !e.Modern() {
			continue // no EXPLAIN on 18.16
		}
		for i, m := range ms {
			if len(stmts[i]) == 0 {
				t.Errorf("%s: no cluster statements", m.Name)
			}
			for _, s := range stmts[i] {
				if !strings.Contains(s+" ", " ON CLUSTER mcplens ") {
					t.Errorf("%s: statement without ON CLUSTER: %s", m.Name, s)
				}
				if err := e.DB.Exec(context.Background(), "EXPLAIN AST "+s); err != nil {
					t.Errorf("%s on %s: %v\n%s", m.Name, e.Name, err, s)
				}
			}
		}
	}
}

// TestClusterForm: the statements the retention and fold jobs send to
// change rows or parts go to every shard's replicated table, with their
// bound parameters untouched and their subqueries' tables named with the
// database, and nothing that changes the schema or hides a second
// statement passes.
func TestClusterForm(t *testing.T) {
	tests := []struct {
		sql, want, reason string
	}{
		{"-- deletes superseded folds\nALTER TABLE calls_5m_folded DELETE\nWHERE toInt64(toUInt32(hour)) IN @hours AND fold IN @folds\n",
			"ALTER TABLE db.calls_5m_folded_local ON CLUSTER c DELETE\nWHERE toInt64(toUInt32(hour)) IN @hours AND fold IN @folds", ""},
		{"ALTER TABLE calls DROP PARTITION @partition;", "ALTER TABLE db.calls_local ON CLUSTER c DROP PARTITION @partition", ""},
		{"ALTER TABLE calls MODIFY TTL ts + INTERVAL @days DAY", "ALTER TABLE db.calls_local ON CLUSTER c MODIFY TTL ts + INTERVAL @days DAY", ""},
		{"ALTER TABLE t DELETE WHERE a = 'x;y', DROP PARTITION 1", "ALTER TABLE db.t_local ON CLUSTER c DELETE WHERE a = 'x;y', DROP PARTITION 1", ""},
		{"ALTER TABLE t ADD COLUMN a String", "", "only a migration may change columns"},
		{"ALTER TABLE tool_sightings DELETE WHERE k NOT IN (\n  SELECT arrayJoin(x) FROM tool_sightings WHERE ts < 1 GROUP BY a)",
			"ALTER TABLE db.tool_sightings_local ON CLUSTER c DELETE WHERE k NOT IN (\n  SELECT arrayJoin(x) FROM db.tool_sightings WHERE ts < 1 GROUP BY a)", ""},
		{"ALTER TABLE t DELETE WHERE k IN (SELECT k FROM numbers(3)) OR k IN (SELECT k FROM other.t2 ANY LEFT JOIN t3 USING k)",
			"ALTER TABLE db.t_local ON CLUSTER c DELETE WHERE k IN (SELECT k FROM numbers(3)) OR k IN (SELECT k FROM other.t2 ANY LEFT JOIN db.t3 USING k)", ""},
		{"ALTER TABLE t DELETE WHERE 1, DROP COLUMN a", "", "only a migration may change columns"},
		{"ALTER TABLE t DELETE WHERE 1; DROP TABLE calls", "", "one statement at a time"},
		{"ALTER TABLE db.t DELETE WHERE 1", "", "without a database"},
		{"ALTER TABLE t", "", "no commands"},
		{"-- folds a day\nOPTIMIZE TABLE calls PARTITION @partition FINAL\n", "OPTIMIZE TABLE db.calls_local ON CLUSTER c PARTITION @partition FINAL", ""},
		{"OPTIMIZE TABLE t", "", "no commands"},
		{"SELECT 1", "", "not an ALTER or OPTIMIZE TABLE"},
	}
	for _, tt := range tests {
		got, err := schema.ClusterForm(tt.sql, "c", "db")
		if tt.reason != "" {
			if err == nil || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("%q: got %q, %v; want an error saying %q", tt.sql, got, err, tt.reason)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q:\n got %q, %v\nwant %q", tt.sql, got, err, tt.want)
		}
	}
	for sql, want := range map[string]string{"-- c\n/* d */ insert INTO t SELECT 1": "INSERT", "  SELECT 1": "SELECT", "-- only a comment": "", "'x'": ""} {
		if got := schema.Verb(sql); got != want {
			t.Errorf("Verb(%q) = %q, want %q", sql, got, want)
		}
	}
}
