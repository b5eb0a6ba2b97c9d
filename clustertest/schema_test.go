package clustertest

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mcplens/mcplens/schema"
)

// TestClusterSchemaOnEveryNode checks what `ingest migrate` in cluster mode
// built: on every node the same tables, each migration's table as a
// replicated local table plus a Distributed one, the materialized view on
// the local tables; and that migrating again changes nothing, statement by
// statement too.
func TestClusterSchemaOnEveryNode(t *testing.T) {
	ctx := context.Background()
	clustered, _ := databases(t)
	db := clustered.cfg.Database
	var first map[string]string
	for s := range cluster.Nodes {
		for r := range cluster.Nodes[s] {
			var rows []struct {
				Name   string `ch:"name"`
				Engine string `ch:"engine"`
			}
			if err := nodeConn(t, s, r, db).Select(ctx, &rows, "SELECT name, engine FROM system.tables WHERE database = currentDatabase()"); err != nil {
				t.Fatal(err)
			}
			tables := map[string]string{}
			for _, row := range rows {
				tables[row.Name] = row.Engine
			}
			if first == nil {
				first = tables
				continue
			}
			if !maps.Equal(tables, first) {
				t.Errorf("node %s has tables %v, node %s %v", cluster.Nodes[s][r].Addr, tables, cluster.Nodes[0][0].Addr, first)
			}
		}
	}
	for _, name := range []string{"calls", "calls_5m", "dead_letters", "schema_migrations"} {
		if first[name] != "Distributed" || !strings.HasPrefix(first[name+schema.LocalSuffix], "Replicated") {
			t.Errorf("%s is %q and %s%s is %q: want Distributed over Replicated*MergeTree",
				name, first[name], name, schema.LocalSuffix, first[name+schema.LocalSuffix])
		}
	}
	for _, name := range []string{"calls_5m_mv", "calls_5m_classes_failed_mv"} {
		if first[name] != "MaterializedView" {
			t.Errorf("%s is %q", name, first[name])
		}
	}
	if e, ok := first["calls_5m_classes_mv"]; ok {
		t.Errorf("calls_5m_classes_mv (%s) is still there; migration 019 drops it", e)
	}
	t.Logf("tables on every node: %v", slices.Sorted(maps.Keys(first)))
	// Every plain view answers on the cluster, where it reads the
	// Distributed tables: the dashboards look the current folds up in
	// calls_5m_current_folds and chain_current_folds (a join) whatever the
	// mode, and the fold job does not run here, so they must answer empty.
	views := 0
	for name, engine := range first {
		if engine != "View" {
			continue
		}
		views++
		var n []struct {
			N uint64 `ch:"n"`
		}
		if err := clustered.conn.Select(ctx, &n, "SELECT count() AS n FROM "+name); err != nil {
			t.Errorf("view %s on the cluster: %v", name, err)
		} else if len(n) != 1 || n[0].N != 0 {
			t.Errorf("view %s on the cluster: %v rows; want none, the fold job does not run in cluster mode", name, n)
		}
	}
	if views < 2 {
		t.Errorf("%d plain views on the cluster; want calls_5m_current_folds and chain_current_folds at least", views)
	}

	applied, err := schema.ApplyCluster(ctx, clustered.conn, clusterName)
	if err != nil || len(applied) != 0 {
		t.Fatalf("second ApplyCluster: applied %v, err %v; want nothing", applied, err)
	}
	ms, err := schema.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	stmts, err := schema.ClusterStatements(ms, clusterName, db)
	if err != nil {
		t.Fatal(err)
	}
	ddlCtx, err := schema.DDLContext(ctx, clustered.conn)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		for _, stmt := range stmts[i] {
			if strings.HasPrefix(stmt, "ALTER") {
				continue // guarded by schema_migrations, like single-server ALTERs
			}
			if err := clustered.conn.Exec(ddlCtx, stmt); err != nil {
				t.Errorf("re-running %s on the cluster: %v", m.Name, err)
			}
		}
	}
}
