package pipeline_test

import (
	"cmp"
	"math/rand/v2"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
)

// TestCallsSortKeyIsTheTableOrderBy holds CallsSortKey, the order in which
// WriteCalls sends rows, to the calls table's ORDER BY: if they drift apart
// nothing breaks, but ClickHouse sorts every part again.
func TestCallsSortKeyIsTheTableOrderBy(t *testing.T) {
	ddl, err := os.ReadFile("../schema/002_calls.sql")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ORDER BY \(([^)]*)\)`).FindSubmatch(ddl)
	if m == nil {
		t.Fatal("no ORDER BY (...) line in schema/002_calls.sql")
	}
	if got := string(m[1]); got != pipeline.CallsSortKey {
		t.Fatalf("calls ORDER BY (%s), CallsSortKey %q", got, pipeline.CallsSortKey)
	}
}

// keyColumns compares two calls on one column of CallsSortKey.
var keyColumns = map[string]func(a, b *pipeline.Call) int{
	"tenant":      func(a, b *pipeline.Call) int { return cmp.Compare(a.Tenant, b.Tenant) },
	"server":      func(a, b *pipeline.Call) int { return cmp.Compare(a.Server, b.Server) },
	"tool":        func(a, b *pipeline.Call) int { return cmp.Compare(a.Tool, b.Tool) },
	"session_key": func(a, b *pipeline.Call) int { return cmp.Compare(a.SessionKey, b.SessionKey) },
	"ts_ms":       func(a, b *pipeline.Call) int { return cmp.Compare(a.TimeMs, b.TimeMs) },
	"call_id":     func(a, b *pipeline.Call) int { return cmp.Compare(a.CallID, b.CallID) },
}

// compareByKey compares two calls column by column of CallsSortKey, the
// way ClickHouse orders the rows of a part (strings as bytes).
func compareByKey(t *testing.T, a, b *pipeline.Call) int {
	for _, col := range strings.Split(pipeline.CallsSortKey, ", ") {
		f, ok := keyColumns[col]
		if !ok {
			t.Fatalf("sort key column %q has no comparison in this test", col)
		}
		if c := f(a, b); c != 0 {
			return c
		}
	}
	return 0
}

func TestSortOrderFollowsTheCallsSortKey(t *testing.T) {
	pick := func(r *rand.Rand, vals ...string) string { return vals[r.IntN(len(vals))] }
	random := func(n int, seed uint64) []pipeline.Call {
		r := rand.New(rand.NewPCG(seed, 1))
		calls := make([]pipeline.Call, n)
		for i := range calls {
			calls[i] = pipeline.Call{
				Tenant: pick(r, "acme", "default", "b", "acme-2"), Server: pick(r, "docs", "billing", ""),
				Tool: pick(r, "search", "search_docs", "get"), SessionKey: pick(r, "s1", "s10", "s2", "call:7", ""),
				TimeMs: int64(r.IntN(4)), CallID: uint64(r.IntN(3)),
			}
		}
		return calls
	}
	for _, tc := range []struct {
		name  string
		calls []pipeline.Call
	}{
		{"none", nil},
		{"one", random(1, 1)},
		{"ties on every column", random(500, 2)},
		{"a batch", random(5000, 3)},
		{"prefixes differ only in a later column", []pipeline.Call{
			{Tenant: "a", Server: "s", Tool: "t2", SessionKey: "x"},
			{Tenant: "a", Server: "s", Tool: "t1", SessionKey: "z"},
			{Tenant: "a", Server: "r", Tool: "t3", SessionKey: "y"},
			{Tenant: "", Server: "z", Tool: "z", SessionKey: "a"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			order := pipeline.SortOrder(pipeline.BatchOf(tc.calls))
			if len(order) != len(tc.calls) {
				t.Fatalf("%d indexes for %d calls", len(order), len(tc.calls))
			}
			seen := make([]bool, len(tc.calls))
			for k, i := range order {
				if i < 0 || int(i) >= len(tc.calls) || seen[i] {
					t.Fatalf("order is not a permutation: index %d at %d", i, k)
				}
				seen[i] = true
				if k > 0 && compareByKey(t, &tc.calls[order[k-1]], &tc.calls[i]) > 0 {
					t.Fatalf("rows %d and %d out of key order: %+v then %+v", k-1, k, tc.calls[order[k-1]], tc.calls[i])
				}
			}
		})
	}
}

// TestDriverRowMatchesValues holds the Writer's row (pointers into the Call
// for plain columns and array elements) to Values, and gives each
// LowCardinality column of schema/002_calls.sql one pointer per distinct
// value: the driver keys their dictionary by the interface value, so a new
// pointer for a value seen before would make it a new entry.
func TestDriverRowMatchesValues(t *testing.T) {
	ddl, err := os.ReadFile("../schema/002_calls.sql")
	if err != nil {
		t.Fatal(err)
	}
	lowCard := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(\w+) LowCardinality\(`).FindAllSubmatch(ddl, -1) {
		lowCard[string(m[1])] = true
	}
	if len(lowCard) != pipeline.LowCardColumns {
		t.Fatalf("schema/002_calls.sql has %d LowCardinality columns, the Writer boxes %d", len(lowCard), pipeline.LowCardColumns)
	}
	lines := generatedLines(t, 200)
	p := &pipeline.Processor{Classifier: classify.Default()}
	cols := pipeline.CallColumns()
	// One builder for every row, as WriteBatch uses it: a LowCardinality
	// value boxed for an earlier row must not leak into a later one.
	var rows pipeline.DriverRows
	seen := map[string]map[string]*string{} // per LowCardinality column, the pointer given for each value
	for _, l := range lines {
		c, err := p.Line(l)
		if err != nil {
			t.Fatal(err)
		}
		want, got := c.Values(), rows.Of(&c)
		if len(got) != len(cols) || len(want) != len(cols) {
			t.Fatalf("%d driver values, %d values, %d columns", len(got), len(want), len(cols))
		}
		for i, col := range cols {
			if lowCard[col] {
				p, ok := got[i].(*string)
				if !ok {
					t.Fatalf("column %s is LowCardinality but the driver row holds a %T", col, got[i])
				}
				if seen[col] == nil {
					seen[col] = map[string]*string{}
				}
				if q := seen[col][*p]; q != nil && q != p {
					t.Fatalf("column %s: value %q under two pointers", col, *p)
				}
				seen[col][*p] = p
			}
			v := reflect.ValueOf(got[i])
			if v.Kind() == reflect.Pointer {
				v = v.Elem()
			}
			if ps, ok := got[i].([]*string); ok {
				ss := make([]string, len(ps))
				for j, p := range ps {
					ss[j] = *p
				}
				v = reflect.ValueOf(ss)
			}
			if !reflect.DeepEqual(v.Interface(), want[i]) {
				t.Fatalf("column %s: driver row %v, Values %v", col, v.Interface(), want[i])
			}
		}
	}
}

// TestDriverRowReusesLowCardinalityBoxes requires a row whose
// LowCardinality values are those of the row before to cost no allocation,
// and a changed value to reach the driver: rows arrive in key order, so
// most rows repeat the tenant, server, tool and class of the one before.
func TestDriverRowReusesLowCardinalityBoxes(t *testing.T) {
	a := pipeline.Call{Tenant: "acme", Server: "docs", Tool: "search", Client: "cli", ProtocolVersion: "2025-06-18",
		Source: "ndjson", Side: "server", ResultType: "text", Category: "OK", ClassSource: "default",
		ClassRule: "", TaxonomyVersion: "v1", ArgKeys: []string{"q"}, ArgValues: []string{"x"}}
	b := a
	b.Category, b.Tool = "INVALID_ARGUMENT", "fetch"
	var rows pipeline.DriverRows
	rows.Of(&a)
	// The two Array(String) columns box their slice headers: the driver
	// takes no pointer to a slice on its fast path.
	if n := testing.AllocsPerRun(100, func() { rows.Of(&a) }); n > 2 {
		t.Fatalf("a row repeating the one before allocates %v times, want at most 2 (the array columns)", n)
	}
	str := func(v any) string { return *v.(*string) }
	search := rows.Of(&a)[5]
	got := rows.Of(&b)
	if str(got[5]) != "fetch" || str(got[29]) != "INVALID_ARGUMENT" || str(got[3]) != "acme" {
		t.Fatalf("changed values not in the row: tool %v, category %v, tenant %v", str(got[5]), str(got[29]), str(got[3]))
	}
	if got = rows.Of(&a); str(got[5]) != "search" || str(got[29]) != "OK" || got[5] != search {
		t.Fatalf("back to the first call: tool %v, category %v, the same pointer as before: %v", str(got[5]), str(got[29]), got[5] == search)
	}
}
