package pipeline

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

//go:embed select_tool_definitions.sql
var selectToolDefinitionsSQL string

//go:embed select_tool_changes.sql
var selectToolChangesSQL string

// toolKey names one tool of one server of one tenant.
type toolKey struct{ tenant, server, tool string }

// change is the time from which a version is the one in force.
type change struct {
	ms   int64
	hash uint64
}

// toolHistory is what the catalog knows of one tool: the times its version
// in force changed, which versions are stored, and when this process last
// wrote a sighting of each version.
type toolHistory struct {
	changes      []change // ascending by ms, then hash; neighbours differ in hash
	stored       map[uint64]bool
	lastSighting map[uint64]int64
	// lastMs is the latest instant of a sighting known stored (written by
	// this process, or a loaded change), and atLast the versions stored at
	// that instant, ascending. A later sighting at that instant with a
	// smaller hash comes before them (select_tool_changes.sql orders one
	// instant's sightings by hash): when it splits the run they belong to,
	// the first of them after it is a change.
	lastMs int64
	atLast []uint64
}

// add records that hash was seen at ms and reports whether the change
// points moved: a new version in force from ms, or a known one in force
// earlier than known. The version in force at t is the one seen last at or
// before t, so a sighting that falls inside the span of another version
// splits it. Sightings at the same instant order by hash, as
// select_tool_changes.sql orders them: of two versions seen at one
// millisecond the larger is in force after it, whichever came first.
func (h *toolHistory) add(ms int64, hash uint64) bool {
	i := sort.Search(len(h.changes), func(j int) bool {
		c := h.changes[j]
		return c.ms > ms || c.ms == ms && c.hash > hash
	})
	if i > 0 && h.changes[i-1].hash == hash {
		return false
	}
	if i < len(h.changes) && h.changes[i].hash == hash {
		h.changes[i].ms = ms
		return true
	}
	h.changes = slices.Insert(h.changes, i, change{ms, hash})
	if ms != h.lastMs || i == 0 {
		return true
	}
	// The run split is the one before the new change: a stored sighting
	// of its version at this instant after hash resumes it.
	j := sort.Search(len(h.atLast), func(k int) bool { return h.atLast[k] > hash })
	if j < len(h.atLast) && h.atLast[j] == h.changes[i-1].hash {
		h.changes = slices.Insert(h.changes, i+1, change{ms, h.atLast[j]})
	}
	return true
}

// storedAt records that a sighting of hash at ms is stored.
func (h *toolHistory) storedAt(ms int64, hash uint64) {
	switch {
	case len(h.atLast) == 0 || ms > h.lastMs:
		h.lastMs, h.atLast = ms, append(h.atLast[:0], hash)
	case ms == h.lastMs:
		if j, found := slices.BinarySearch(h.atLast, hash); !found {
			h.atLast = slices.Insert(h.atLast, j, hash)
		}
	}
}

// at returns the hash of the version in force at ms.
func (h *toolHistory) at(ms int64) (uint64, bool) {
	i := sort.Search(len(h.changes), func(j int) bool { return h.changes[j].ms > ms })
	if i == 0 {
		return 0, false
	}
	return h.changes[i-1].hash, true
}

// toolVersion is one definition version with its schemas compiled on first
// use. Identical definitions of several tenants or servers share one.
type toolVersion struct {
	hash   uint64
	input  string
	output string

	once       sync.Once
	in, out    *compiledSchema
	compileErr error
	reported   atomic.Bool // compileErr was logged
}

// compiled compiles the schemas once; err reports a schema that cannot be
// compiled, whose side is then not validated.
func (v *toolVersion) compiled() (in, out *compiledSchema, err error) {
	v.once.Do(func() {
		var errs []error
		if v.input != "" {
			var err error
			if v.in, err = compileSchema(v.input, fmt.Sprintf("mcplens:///%016x/input.json", v.hash)); err != nil {
				errs = append(errs, fmt.Errorf("inputSchema: %w", err))
			}
		}
		if v.output != "" {
			var err error
			if v.out, err = compileSchema(v.output, fmt.Sprintf("mcplens:///%016x/output.json", v.hash)); err != nil {
				errs = append(errs, fmt.Errorf("outputSchema: %w", err))
			}
		}
		if len(errs) > 0 {
			v.compileErr = errs[0]
		}
	})
	return v.in, v.out, v.compileErr
}

// catalog holds, per (tenant, server, tool), the versions of its definition
// over time. It is safe for concurrent use.
type catalog struct {
	mu          sync.RWMutex
	tools       map[toolKey]*toolHistory
	versions    map[uint64]*toolVersion
	every       int64 // ms between sightings of one version written by this process
	maxTools    int
	maxVersions int
}

func newCatalog(every time.Duration, maxTools int) *catalog {
	return &catalog{tools: map[toolKey]*toolHistory{}, versions: map[uint64]*toolVersion{},
		every: every.Milliseconds(), maxTools: maxTools, maxVersions: 4 * maxTools}
}

// observe records one definition as seen at d.SeenMs. It reports whether
// its definition row and a sighting row are to be written, and false in
// tracked when the catalog is full and the tool is not tracked.
func (c *catalog) observe(d *ToolDef) (writeDef, writeSighting, tracked bool) {
	k := toolKey{d.Tenant, d.Server, d.Tool}
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.tools[k]
	if h == nil && len(c.tools) >= c.maxTools || c.versions[d.Hash] == nil && len(c.versions) >= c.maxVersions {
		return false, false, false
	}
	if h == nil {
		h = &toolHistory{stored: map[uint64]bool{}, lastSighting: map[uint64]int64{}}
		c.tools[k] = h
	}
	if c.versions[d.Hash] == nil {
		c.versions[d.Hash] = newVersion(d)
	}
	writeDef = !h.stored[d.Hash]
	h.stored[d.Hash] = true
	moved := h.add(d.SeenMs, d.Hash)
	last, seen := h.lastSighting[d.Hash]
	writeSighting = moved || !seen || abs64(d.SeenMs-last) >= c.every
	if writeSighting {
		h.lastSighting[d.Hash] = d.SeenMs
		h.storedAt(d.SeenMs, d.Hash)
	}
	return writeDef, writeSighting, true
}

func newVersion(d *ToolDef) *toolVersion {
	return &toolVersion{hash: d.Hash, input: d.InputSchema, output: d.OutputSchema}
}

// at returns the version of (tenant, server, tool) in force at ms.
func (c *catalog) at(tenant, server, tool string, ms int64) (*toolVersion, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	h := c.tools[toolKey{tenant, server, tool}]
	if h == nil {
		return nil, false
	}
	hash, ok := h.at(ms)
	if !ok {
		return nil, false
	}
	v := c.versions[hash]
	return v, v != nil
}

// storedDefinition is one row of select_tool_definitions.sql.
type storedDefinition struct {
	Tenant       string `ch:"tenant_"`
	Server       string `ch:"server_"`
	Tool         string `ch:"tool_"`
	Hash         uint64 `ch:"hash_"`
	InputSchema  string `ch:"input_"`
	OutputSchema string `ch:"output_"`
}

// storedChange is one row of select_tool_changes.sql.
type storedChange struct {
	Tenant string `ch:"tenant_"`
	Server string `ch:"server_"`
	Tool   string `ch:"tool_"`
	Ms     int64  `ch:"change_ms"`
	Hash   uint64 `ch:"change_hash"`
}

// load merges the stored definitions and change points into the catalog,
// without writing anything. It is idempotent, so a periodic refresh picks
// up what other ingest processes captured.
func (c *catalog) load(ctx context.Context, db Selecter) (tools int, err error) {
	var defs []storedDefinition
	if err := db.Select(ctx, &defs, selectToolDefinitionsSQL); err != nil {
		return 0, fmt.Errorf("load tool definitions: %w", err)
	}
	var changes []storedChange
	if err := db.Select(ctx, &changes, selectToolChangesSQL); err != nil {
		return 0, fmt.Errorf("load tool definition changes: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	history := func(k toolKey) *toolHistory {
		h := c.tools[k]
		if h == nil && len(c.tools) < c.maxTools {
			h = &toolHistory{stored: map[uint64]bool{}, lastSighting: map[uint64]int64{}}
			c.tools[k] = h
		}
		return h
	}
	for _, d := range defs {
		if c.versions[d.Hash] == nil && len(c.versions) < c.maxVersions {
			td := ToolDef{Hash: d.Hash, InputSchema: d.InputSchema, OutputSchema: d.OutputSchema}
			c.versions[d.Hash] = newVersion(&td)
		}
		if h := history(toolKey{d.Tenant, d.Server, d.Tool}); h != nil {
			h.stored[d.Hash] = true
		}
	}
	for _, ch := range changes {
		if h := history(toolKey{ch.Tenant, ch.Server, ch.Tool}); h != nil {
			h.add(ch.Ms, ch.Hash)
			h.storedAt(ch.Ms, ch.Hash)
		}
	}
	return len(c.tools), nil
}

// Selecter runs a query and scans the rows into a slice of structs by `ch`
// tags: clickhouse-go's driver.Conn, or the in-process engine in tests.
type Selecter interface {
	Select(ctx context.Context, dest any, query string, args ...any) error
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
