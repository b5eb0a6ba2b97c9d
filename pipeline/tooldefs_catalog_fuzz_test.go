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
// with flushes (the rows queued stored, or refused for good), refreshes
// (the stored history merged into the live catalog, as -tool-refresh does)
// and restarts (a new catalog loaded from it). The stored history is what
// observe asked to write and a flush stored; stored change points
// follow select_tool_changes.sql (sightings ordered by time then hash, and
// every one whose hash differs from the one before it), and the version in
// force at t is the last change at or before t (docs/schemas.md).
//
// Each pair of bytes is one step: in the first byte the low two bits are
// the step (0 a sighting, 1 a flush of the rows queued, 2 a refresh, 3 a
// restart after a shutdown's flush); for a sighting, bit 2 is the tool and
// bits 3-4 the version (1, 2, 3, 1 again), and the second byte its time in
// seconds; for a flush, bit 2 makes ClickHouse refuse the rows for good
// (Tools.Flush drops them and makes the catalog forget them). The catalog
// writes a sighting of a version at most every 10 s otherwise.
//
// While a tool's sightings come in time order (ties at one instant in any
// order; after a restart, later than every stored one), a sighting the
// catalog does not write changes no answer of the rows stored and queued,
// and, unless a sighting of the tool was refused since the last restart
// (the catalog keeps its change), the live catalog's version in force at
// every instant is theirs. After a refresh with nothing queued, or a
// restart, it is the stored history's whatever the order. A definition is
// written once per tool and version, and again after a refusal.
func FuzzToolCatalog(f *testing.F) {
	// Seeds: two versions at the same instant, the larger first; a return
	// to a version with a restart; a late sighting inside another version's
	// run, then a flush and a refresh; the same version again within the
	// interval; a return to a stored version refused for good, then that
	// version again within the interval.
	f.Add([]byte{0x10, 5, 0x08, 5, 0x00, 9})
	f.Add([]byte{0x08, 1, 0x10, 20, 0x08, 40, 0x03, 0, 0x08, 60})
	f.Add([]byte{0x08, 1, 0x10, 5, 0x10, 30, 0x08, 10, 0x01, 0, 0x02, 0, 0x08, 40})
	f.Add([]byte{0x08, 1, 0x08, 3, 0x08, 15, 0x0c, 2, 0x1c, 2})
	f.Add([]byte{0x08, 1, 0x10, 5, 0x01, 0, 0x08, 20, 0x05, 0, 0x08, 21, 0x01, 0, 0x02, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 256 {
			return
		}
		const every = 10 * time.Second
		tools := []string{"search_docs", "get_doc"}
		c := newCatalog(every, 100)
		// What observe asked to write: stored in ClickHouse (written, defs,
		// as select_tool_changes.sql and select_tool_definitions.sql read
		// them), or still queued (pending, pendingDefs) until a flush
		// stores or drops them.
		var written, pending []storedChange
		defs := map[toolKey]map[uint64]bool{}
		var pendingDefs []ToolDef
		queued := func() []storedChange { return append(slices.Clone(written), pending...) }
		order := map[toolKey]*sightingOrder{}
		drifted := map[string]bool{} // a sighting of the tool was dropped: the catalog keeps its change
		for _, tool := range tools {
			order[toolKey{"acme", "kb", tool}] = &sightingOrder{ok: true, floor: -1}
		}
		db := catalogDB{written: &written, defs: defs}
		store := func() {
			written = append(written, pending...)
			for _, d := range pendingDefs {
				k := toolKey{d.Tenant, d.Server, d.Tool}
				if defs[k] == nil {
					defs[k] = map[uint64]bool{}
				}
				defs[k][d.Hash] = true
			}
			pending, pendingDefs = nil, nil
		}
		for i := 0; i+1 < len(data); i += 2 {
			op, arg := data[i], data[i+1]
			switch op & 3 {
			case 1:
				if op&4 == 0 {
					store()
					continue
				}
				// Refused for good: Tools.Flush drops the rows and forgets them.
				for i := range pendingDefs {
					c.forget(&pendingDefs[i])
				}
				for _, s := range pending {
					c.forgetSighting(&ToolSighting{TimeMs: s.Ms, Tenant: s.Tenant, Server: s.Server, Tool: s.Tool, DefinitionHash: s.Hash})
					drifted[s.Tool] = true
				}
				pending, pendingDefs = nil, nil
				continue
			case 2:
				if _, err := c.load(context.Background(), db); err != nil {
					t.Fatal(err)
				}
				// A refresh repairs the catalog from what is stored.
				for _, tool := range tools {
					if !drifted[tool] && len(pending) == 0 {
						checkInForce(t, c, tool, written, "after a refresh")
					}
				}
				continue
			case 3:
				store() // a shutdown drains the queue
				c = newCatalog(every, 100)
				if _, err := c.load(context.Background(), db); err != nil {
					t.Fatal(err)
				}
				clear(drifted)
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
			known := defs[k][hash] || slices.ContainsFunc(pendingDefs, func(p ToolDef) bool { return p.Tool == tool && p.Hash == hash })
			if writeDef == known {
				t.Fatalf("%s version %d at %d s: definition written %v, stored or queued before %v", tool, hash, arg, writeDef, known)
			}
			if writeDef {
				pendingDefs = append(pendingDefs, d)
			}
			s := storedChange{Tenant: k.tenant, Server: k.server, Tool: k.tool, Ms: ms, Hash: hash}
			if writeSighting {
				pending = append(pending, s)
			} else if before, with := queued(), append(queued(), s); o.ok && !reflect.DeepEqual(changePoints(with, tool), changePoints(before, tool)) {
				t.Fatalf("%s version %d at %d s not written, yet it moves the stored change points from %v to %v",
					tool, hash, arg, changePoints(before, tool), changePoints(with, tool))
			}
			if o.ok && !drifted[tool] {
				checkInForce(t, c, tool, queued(), fmt.Sprintf("after version %d at %d s, in time order", hash, arg))
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
		var tools []string // each tool sighted, once, in the query's order
		for _, x := range *db.written {
			tools = append(tools, x.Tool)
		}
		slices.Sort(tools)
		for _, tool := range slices.Compact(tools) {
			*out = append(*out, changePoints(*db.written, tool)...)
		}
	default:
		return fmt.Errorf("unexpected query %.40q", query)
	}
	return nil
}
