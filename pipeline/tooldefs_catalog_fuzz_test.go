package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
)

// FuzzToolCatalog drives the tool catalog with sightings of three versions
// of two tools, in time order or not, at instants that often coincide, and
// with refreshes (the stored history merged into the live catalog, as
// -tool-refresh does) and restarts (a new catalog loaded from it). The
// stored history is what observe asked to write; stored change points
// follow select_tool_changes.sql (sightings ordered by time then hash, and
// every one whose hash differs from the one before it), and the version in
// force at t is the last change at or before t (docs/schemas.md).
//
// Each pair of bytes is one step: in the first byte the low two bits are
// the step (0 and 1 a sighting, 2 a refresh, 3 a restart), bit 2 the tool
// and bits 3-4 the version (1, 2, 3, 1 again); the second byte is the
// sighting's time in seconds. The catalog writes a sighting of a version
// at most every 10 s otherwise.
//
// While a tool's sightings come in time order (ties at one instant in any
// order; after a restart, later than every stored one), a sighting the
// catalog does not write changes no stored answer, and the live catalog's
// version in force at every instant is the stored history's. After a
// refresh or a restart it is so whatever the order. A definition is
// written once per tool and version.
func FuzzToolCatalog(f *testing.F) {
	// Seeds: two versions at the same instant, the larger first; a return
	// to a version with a restart; a late sighting inside another version's
	// run, then a refresh; the same version again within the interval.
	f.Add([]byte{0x10, 5, 0x08, 5, 0x00, 9})
	f.Add([]byte{0x08, 1, 0x10, 20, 0x08, 40, 0x03, 0, 0x08, 60})
	f.Add([]byte{0x08, 1, 0x10, 5, 0x10, 30, 0x08, 10, 0x02, 0, 0x08, 40})
	f.Add([]byte{0x08, 1, 0x08, 3, 0x08, 15, 0x0c, 2, 0x1c, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 256 {
			return
		}
		const every = 10 * time.Second
		tools := []string{"search_docs", "get_doc"}
		c := newCatalog(every, 100)
		var written []storedChange            // sightings written, as select_tool_changes.sql reads them
		defs := map[toolKey]map[uint64]bool{} // definitions written
		order := map[toolKey]*sightingOrder{}
		for _, tool := range tools {
			order[toolKey{"acme", "kb", tool}] = &sightingOrder{ok: true, floor: -1}
		}
		db := catalogDB{written: &written, defs: defs}
		for i := 0; i+1 < len(data); i += 2 {
			op, arg := data[i], data[i+1]
			switch op & 3 {
			case 2:
				if _, err := c.load(context.Background(), db); err != nil {
					t.Fatal(err)
				}
				for _, tool := range tools {
					checkInForce(t, c, tool, written, "after a refresh")
				}
				continue
			case 3:
				c = newCatalog(every, 100)
				if _, err := c.load(context.Background(), db); err != nil {
					t.Fatal(err)
				}
				for _, tool := range tools {
					checkInForce(t, c, tool, written, "after a restart")
					o := order[toolKey{"acme", "kb", tool}]
					o.ok, o.floor, o.strict = true, -1, true
					for _, s := range written {
						if s.Tool == tool {
							o.floor = max(o.floor, s.Ms)
						}
					}
				}
				continue
			}
			tool := tools[op>>2&1]
			hash := uint64(op>>3&3)%3 + 1
			ms := int64(arg) * 1000
			k := toolKey{"acme", "kb", tool}
			d := ToolDef{Tenant: k.tenant, Server: k.server, Tool: k.tool, Hash: hash, SeenMs: ms}
			o := order[k]
			o.see(ms)
			writeDef, writeSighting, tracked := c.observe(&d)
			if !tracked {
				t.Fatal("a tool of a catalog with room is not tracked")
			}
			if writeDef == defs[k][hash] {
				t.Fatalf("%s version %d at %d s: definition written %v, stored before %v", tool, hash, arg, writeDef, defs[k][hash])
			}
			if defs[k] == nil {
				defs[k] = map[uint64]bool{}
			}
			defs[k][hash] = true
			s := storedChange{Tenant: k.tenant, Server: k.server, Tool: k.tool, Ms: ms, Hash: hash}
			if writeSighting {
				written = append(written, s)
			} else if with := append(slices.Clone(written), s); o.ok && !reflect.DeepEqual(changePoints(with, tool), changePoints(written, tool)) {
				t.Fatalf("%s version %d at %d s not written, yet it moves the stored change points from %v to %v",
					tool, hash, arg, changePoints(written, tool), changePoints(with, tool))
			}
			if o.ok {
				checkInForce(t, c, tool, written, fmt.Sprintf("after version %d at %d s, in time order", hash, arg))
			}
		}
	})
}

// sightingOrder follows whether a tool's sightings came in time order:
// none before floor (none at floor either when strict).
type sightingOrder struct {
	ok     bool
	floor  int64
	strict bool
}

func (o *sightingOrder) see(ms int64) {
	if ms < o.floor || o.strict && ms == o.floor {
		o.ok = false
	}
	if ms > o.floor {
		o.floor, o.strict = ms, false
	}
}

// changePoints returns tool's change points in the sightings, as
// select_tool_changes.sql computes them.
func changePoints(sightings []storedChange, tool string) []storedChange {
	var s []storedChange
	for _, x := range sightings {
		if x.Tool == tool {
			s = append(s, x)
		}
	}
	slices.SortFunc(s, func(a, b storedChange) int { return cmp.Or(cmp.Compare(a.Ms, b.Ms), cmp.Compare(a.Hash, b.Hash)) })
	var points []storedChange
	for i, x := range s {
		if i == 0 || x.Hash != s[i-1].Hash {
			points = append(points, x)
		}
	}
	return points
}

// checkInForce compares the catalog's version in force at every half
// second of the fuzzed range with the stored history's.
func checkInForce(t *testing.T, c *catalog, tool string, written []storedChange, when string) {
	t.Helper()
	points := changePoints(written, tool)
	for ms := int64(-500); ms <= 256_000; ms += 500 {
		var want uint64
		for _, p := range points {
			if p.Ms <= ms {
				want = p.Hash
			}
		}
		var got uint64
		if v, ok := c.at("acme", "kb", tool, ms); ok {
			got = v.hash
		}
		if got != want {
			t.Fatalf("%s, %s at %d ms: version %d in force, the stored history says %d (change points %v)", when, tool, ms, got, want, points)
		}
	}
}

// catalogDB answers the catalog's two queries from what the fuzz test
// wrote, as ClickHouse would.
type catalogDB struct {
	written *[]storedChange
	defs    map[toolKey]map[uint64]bool
}

func (db catalogDB) Select(_ context.Context, dest any, query string, _ ...any) error {
	switch query {
	case selectToolDefinitionsSQL:
		out := dest.(*[]storedDefinition)
		for k, hashes := range db.defs {
			for h := range hashes {
				*out = append(*out, storedDefinition{Tenant: k.tenant, Server: k.server, Tool: k.tool, Hash: h})
			}
		}
	case selectToolChangesSQL:
		out := dest.(*[]storedChange)
		for _, tool := range []string{"get_doc", "search_docs"} {
			*out = append(*out, changePoints(*db.written, tool)...)
		}
	default:
		return fmt.Errorf("unexpected query %.40q", query)
	}
	return nil
}
