package queries

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
)

var (
	toolSightingsSQL   = mustSQL("tool_sightings.sql")
	toolDefinitionsSQL = mustSQL("tool_definitions.sql")
	toolChangesSQL     = mustSQL("tool_changes.sql")
)

// ToolVersion is one version of one tool's definition (docs/schemas.md):
// what the server announced in tools/list, and when.
type ToolVersion struct {
	Tenant string `json:"tenant"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Version numbers the versions of one tool in order of first sighting,
	// from 1.
	Version        int             `json:"version"`
	DefinitionHash string          `json:"definition_hash"` // 16 hex digits
	Title          string          `json:"title"`
	Description    string          `json:"description"`
	InputSchema    json.RawMessage `json:"input_schema"`  // null when the definition has none
	OutputSchema   json.RawMessage `json:"output_schema"` // null when the definition has none
	// Hints as announced; null when the definition leaves one out (the
	// protocol default applies: readOnly false, destructive true,
	// idempotent false, openWorld true).
	ReadOnlyHint    *bool     `json:"read_only_hint"`
	DestructiveHint *bool     `json:"destructive_hint"`
	IdempotentHint  *bool     `json:"idempotent_hint"`
	OpenWorldHint   *bool     `json:"open_world_hint"`
	FirstSeen       time.Time `json:"first_seen"`
	LastSeen        time.Time `json:"last_seen"`
	// InForceFrom lists when this version became the one in force: its
	// first sighting, and again each time the server returned to it.
	InForceFrom []time.Time `json:"in_force_from"`
	// Current reports that the version is the one in force at the end of
	// the range.
	Current bool `json:"current"`
}

// Idempotent reports whether repeating a call is harmless by the hints:
// idempotentHint or readOnlyHint true.
func (v ToolVersion) Idempotent() bool {
	return v.IdempotentHint != nil && *v.IdempotentHint || v.ReadOnlyHint != nil && *v.ReadOnlyHint
}

// DefinitionChange is one time a tool's definition in force changed: a new
// version, or a return to an earlier one.
type DefinitionChange struct {
	Tenant       string
	Server       string
	Tool         string
	Time         time.Time
	Hash         uint64
	PreviousHash uint64
}

type changePoint struct {
	Tenant   string `ch:"tenant_"`
	Server   string `ch:"server_"`
	Tool     string `ch:"tool_"`
	Ms       int64  `ch:"change_ms"`
	Hash     uint64 `ch:"change_hash"`
	Previous uint64 `ch:"previous_hash"`
	First    uint8  `ch:"is_first"`
}

// changePoints returns the change points before f.To of the tools of f
// that all and set (toolArgs) bind.
func changePoints(ctx context.Context, db DB, f Filter, all, set any) ([]changePoint, error) {
	var pts []changePoint
	if err := db.Select(ctx, &pts, toolChangesSQL, append(f.args(), all, set)...); err != nil {
		return nil, fmt.Errorf("tool definition changes: %w", err)
	}
	return pts, nil
}

// DefinitionChanges returns the changes of the matching tools' definitions
// in [f.From, f.To), ordered by tenant, server, tool and time. A tool's
// first known definition is not a change.
func DefinitionChanges(ctx context.Context, db DB, f Filter) ([]DefinitionChange, error) {
	all, set := toolArgs(nil, 0)
	return definitionChanges(ctx, db, f, all, set)
}

// definitionChanges is DefinitionChanges for the tools that all and set
// (toolArgs) bind.
func definitionChanges(ctx context.Context, db DB, f Filter, all, set any) ([]DefinitionChange, error) {
	pts, err := changePoints(ctx, db, f, all, set)
	if err != nil {
		return nil, err
	}
	var out []DefinitionChange
	for _, p := range pts {
		if p.First == 1 || p.Ms < f.From.UnixMilli() {
			continue
		}
		out = append(out, DefinitionChange{Tenant: p.Tenant, Server: p.Server, Tool: p.Tool,
			Time: time.UnixMilli(p.Ms).UTC(), Hash: p.Hash, PreviousHash: p.Previous})
	}
	return out, nil
}

// ToolVersions returns the definition versions of the matching tools that
// matter for [f.From, f.To): every version seen in the range, and the one in
// force when the range starts. Rows are ordered by tenant, server, tool and
// version. Versions are known only from tools/list results, POST /v1/tools
// and `ingest tools`; a tool never listed has none.
func ToolVersions(ctx context.Context, db DB, f Filter) ([]ToolVersion, error) {
	var seen []struct {
		Tenant  string `ch:"tenant_"`
		Server  string `ch:"server_"`
		Tool    string `ch:"tool_"`
		Hash    uint64 `ch:"hash_"`
		FirstMs int64  `ch:"first_ms"`
		LastMs  int64  `ch:"last_ms"`
	}
	if err := db.Select(ctx, &seen, toolSightingsSQL, f.args()...); err != nil {
		return nil, fmt.Errorf("tool versions: %w", err)
	}
	if len(seen) == 0 {
		return nil, nil
	}
	var defs []struct {
		Tenant      string `ch:"tenant_"`
		Server      string `ch:"server_"`
		Tool        string `ch:"tool_"`
		Hash        uint64 `ch:"hash_"`
		Title       string `ch:"title_"`
		Description string `ch:"description_"`
		Input       string `ch:"input_"`
		Output      string `ch:"output_"`
		ReadOnly    int8   `ch:"read_only_"`
		Destructive int8   `ch:"destructive_"`
		Idempotent  int8   `ch:"idempotent_"`
		OpenWorld   int8   `ch:"open_world_"`
	}
	if err := db.Select(ctx, &defs, toolDefinitionsSQL, f.args()...); err != nil {
		return nil, fmt.Errorf("tool definitions: %w", err)
	}
	all, set := toolArgs(nil, 0)
	pts, err := changePoints(ctx, db, f, all, set)
	if err != nil {
		return nil, err
	}
	type key struct {
		tenant, server, tool string
		hash                 uint64
	}
	type toolKey struct{ tenant, server, tool string }
	byKey := map[key]int{}
	for i, d := range defs {
		byKey[key{d.Tenant, d.Server, d.Tool, d.Hash}] = i
	}
	inForce := map[key][]time.Time{}
	current := map[toolKey]uint64{} // version in force at To
	atFrom := map[toolKey]uint64{}  // version in force at From
	for _, p := range pts {
		k := key{p.Tenant, p.Server, p.Tool, p.Hash}
		inForce[k] = append(inForce[k], time.UnixMilli(p.Ms).UTC())
		current[toolKey{p.Tenant, p.Server, p.Tool}] = p.Hash
		if p.Ms <= f.From.UnixMilli() {
			atFrom[toolKey{p.Tenant, p.Server, p.Tool}] = p.Hash
		}
	}
	var out []ToolVersion
	version := map[toolKey]int{}
	for _, s := range seen { // ordered by tool, then first sighting
		tk := toolKey{s.Tenant, s.Server, s.Tool}
		version[tk]++
		if s.LastMs < f.From.UnixMilli() && atFrom[tk] != s.Hash {
			continue
		}
		v := ToolVersion{Tenant: s.Tenant, Server: s.Server, Tool: s.Tool, Version: version[tk],
			DefinitionHash: HashString(s.Hash), InputSchema: rawOrNull(""), OutputSchema: rawOrNull(""),
			FirstSeen: time.UnixMilli(s.FirstMs).UTC(), LastSeen: time.UnixMilli(s.LastMs).UTC(),
			InForceFrom: inForce[key{s.Tenant, s.Server, s.Tool, s.Hash}], Current: current[tk] == s.Hash}
		if v.InForceFrom == nil {
			v.InForceFrom = []time.Time{}
		}
		if i, ok := byKey[key{s.Tenant, s.Server, s.Tool, s.Hash}]; ok {
			d := defs[i]
			v.Title, v.Description = d.Title, d.Description
			v.InputSchema, v.OutputSchema = rawOrNull(d.Input), rawOrNull(d.Output)
			v.ReadOnlyHint, v.DestructiveHint = hintOf(d.ReadOnly), hintOf(d.Destructive)
			v.IdempotentHint, v.OpenWorldHint = hintOf(d.Idempotent), hintOf(d.OpenWorld)
		}
		out = append(out, v)
	}
	slices.SortStableFunc(out, func(a, b ToolVersion) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Server, b.Server), cmp.Compare(a.Tool, b.Tool),
			cmp.Compare(a.Version, b.Version))
	})
	return out, nil
}

// HashString writes a definition hash as the API shows it: 16 hex digits.
func HashString(h uint64) string {
	s := strconv.FormatUint(h, 16)
	for len(s) < 16 {
		s = "0" + s
	}
	return s
}

func rawOrNull(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage("null")
	}
	return json.RawMessage(s)
}

func hintOf(v int8) *bool {
	if v < 0 {
		return nil
	}
	b := v == 1
	return &b
}
