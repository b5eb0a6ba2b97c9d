package dashboards_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chconn"
	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/dashboards"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/schema"
)

// TestPanelsOnCluster writes the panel fixture to a 2-shard cluster of
// ClickHouse 18.16 in cluster mode (docs/scaling.md) and to a single 18.16
// server, and requires every variable query and panel target of every
// dashboard, expanded as the plugin would, to return the same rows on
// both, and so must every alert rule's query: first over the raw calls and
// the rollups' states, then with the complete hours and their chains
// folded, on the cluster by the retention job's cluster form
// (compact.Clustered). The panels' subqueries over
// tables are GLOBAL, as a cluster needs; a plain one fails there.
func TestPanelsOnCluster(t *testing.T) {
	ctx := context.Background()
	var one *chtest.Engine
	for _, e := range chtest.Engines(t) {
		if !e.Modern() {
			one = e
		}
	}
	if one == nil {
		t.Fatal("no ClickHouse 18.16 server among the engines")
	}
	const name = "mcplens"
	start := time.Now()
	cl, err := chtest.StartCluster(ctx, filepath.Join(t.TempDir(), "cluster"), name, 2, 1)
	if err != nil {
		t.Fatalf("ClickHouse cluster: %v", err)
	}
	defer cl.Stop()
	cfg := chconn.Config{Addr: strings.Join(cl.Addrs(), ","), Cluster: name, Database: "panels", User: "default",
		DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Minute}
	conn, err := chconn.Open(ctx, cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := schema.ApplyCluster(ctx, conn, name); err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster up and migrated in %s", time.Since(start).Round(time.Millisecond))
	clustered := &chtest.Engine{Name: "cluster-18.16", DB: conn, Conn: conn, Addr: cl.Addrs()[0], Database: cfg.Database}
	fixture := calls(panelFixture())
	for _, e := range []*chtest.Engine{one, clustered} {
		e.Insert(t, fixture)
		e.InsertTools(t, toolRowsFixture())
	}
	ds := generatedDashboards(t)
	rules := provisionedRules(t)
	same := func(t *testing.T, sql string) ([]column, [][]any) {
		t.Helper()
		cols, rows := query(t, one, sql)
		ccols, crows := query(t, clustered, sql)
		if !slices.Equal(ccols, cols) {
			t.Fatalf("columns on the cluster %v, on one server %v\n%s", ccols, cols, sql)
		}
		if got, want := canonicalRows(crows), canonicalRows(rows); !slices.Equal(got, want) {
			t.Errorf("the cluster and one server differ:\n got %d rows %.2000s\nwant %d rows %.2000s\n%s", len(got), got, len(want), want, sql)
		}
		return cols, rows
	}
	compare := func(t *testing.T) {
		checkPanels(t, ds, cached(func(sql string) ([]column, [][]any) { return same(t, sql) }))
		// The alert rules' queries too, at the fixture's now, as Grafana's
		// alerting expands them (evaluate).
		for _, r := range rules {
			for _, q := range r.Data {
				if q.DatasourceUID != dashboards.ClickHouseDatasourceUID {
					continue
				}
				same(t, expandMacros(t, q.Model.RawSQL, macroRange{
					from:     now.Add(-time.Duration(q.RelativeTimeRange.From) * time.Second),
					to:       now.Add(-time.Duration(q.RelativeTimeRange.To) * time.Second),
					interval: time.Second,
				}))
			}
		}
	}
	t.Run("raw", compare)

	first := slices.MinFunc(fixture, func(a, b pipeline.Call) int { return a.Time.Compare(b.Time) }).Time
	span := (time.Since(first)/(24*time.Hour) + 1) * 24 * time.Hour
	c, err := compact.NewClustered(ctx, conn, name)
	if err != nil {
		t.Fatal(err)
	}
	// Both fold at once: most of the test's time.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, db := range []compact.DB{one.DB, c} {
		wg.Go(func() {
			h, err := compact.RollupHours(ctx, db, time.Now(), span, 0)
			if err == nil && len(h.Folded) < 24 {
				err = fmt.Errorf("folded %d hours; want the fixture's", len(h.Folded))
			}
			if err != nil {
				errs[i] = err
				return
			}
			ch, err := compact.RollupChains(ctx, db, time.Now(), span, 0)
			errs[i] = err
			t.Logf("folded %d hours in %s, the chains of %d in %s", len(h.Folded), h.Took.Round(time.Millisecond), len(ch.Folded), ch.Took.Round(time.Millisecond))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("fold: %v", err)
	}
	t.Run("folded", compare)
}

// canonicalRows renders rows in a sorted order, floats to 9 significant
// digits: the shards' partial results reach the node that merges them in
// any order, which moves ties and the last bits of float sums.
func canonicalRows(rows [][]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		var b strings.Builder
		for j, v := range r {
			if j > 0 {
				b.WriteString(" | ")
			}
			switch f := v.(type) {
			case float64:
				if math.IsNaN(f) {
					b.WriteString("NaN")
				} else {
					fmt.Fprintf(&b, "%.9g", f)
				}
			case float32:
				fmt.Fprintf(&b, "%.6g", f)
			default:
				fmt.Fprint(&b, v)
			}
		}
		out[i] = b.String()
	}
	slices.Sort(out)
	return out
}
