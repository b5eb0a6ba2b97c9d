package queries

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcplens/mcplens/spelling"
)

var (
	unknownToolsSQL         = mustSQL("unknown_tools.sql")
	unknownToolsAnsweredSQL = mustSQL("unknown_tools_answered.sql")
	unknownToolsKnownSQL    = mustSQL("unknown_tools_known.sql")
)

// Verdicts of an UnknownTool: what the refused name most likely is, so that
// the fix goes to the right place (docs/analytics.md, "Unknown tool
// names"). The first that applies is the verdict.
const (
	// VerdictAnswered: the server answered other calls of the name in the
	// range. Its instances disagree (a deploy in progress, a replica on an
	// old version) or it registers the tool only at times.
	VerdictAnswered = "answered"
	// VerdictListed: the server listed the name in tools/list at or after
	// the first refused call: its tool list and its dispatcher disagree.
	VerdictListed = "listed"
	// VerdictRemoved: the server listed the name before the first refused
	// call, not since: clients call from a stale tool list (with a
	// suggestion, the tool was most likely renamed to it).
	VerdictRemoved = "removed"
	// VerdictRespelled, VerdictNamespaced, VerdictMisspelled: the name is a
	// known tool's with other case or separators, with a prefix added or
	// dropped, or with a slip of a letter or two (spelling.Nearest).
	VerdictRespelled  = string(spelling.Respelled)
	VerdictNamespaced = string(spelling.Namespaced)
	VerdictMisspelled = string(spelling.Misspelled)
	// VerdictReworded: the name shares a word that is not a verb with one
	// known tool (get_customer for lookup_customer): the model guessed the
	// name from what the tool does.
	VerdictReworded = string(spelling.Reworded)
	// VerdictInvented: the server has known tools and none is near the
	// name or shares a word with it: the model made it up.
	VerdictInvented = "invented"
	// VerdictNoKnownTools: the server answered no call and listed no tool
	// in the range, so there is nothing to compare the name with.
	VerdictNoKnownTools = "no_known_tools"
)

// Verdicts lists the verdicts in the order they are tried.
var Verdicts = []string{VerdictAnswered, VerdictListed, VerdictRemoved, VerdictRespelled, VerdictNamespaced,
	VerdictMisspelled, VerdictReworded, VerdictInvented, VerdictNoKnownTools}

// UnknownToolOptions narrow GET /api/v1/unknown-tools.
type UnknownToolOptions struct {
	Limit int64 // at most this many names, most refused calls first (default 100)
}

// UnknownTool is a tool name a server refused as unknown (UNKNOWN_TOOL) in
// the range, with the tool it was most likely meant to be.
type UnknownTool struct {
	Tenant string `json:"tenant"`
	Server string `json:"server"`
	Tool   string `json:"tool"` // the name the client asked for
	// Calls counts the calls of the name whose latest ingest is
	// UNKNOWN_TOOL, Sessions their sessions.
	Calls     uint64    `json:"calls"`
	Sessions  uint64    `json:"sessions"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// AnsweredCalls counts the name's other calls in the range, whose
	// latest ingest is not UNKNOWN_TOOL; LastAnswered is the last of them.
	AnsweredCalls uint64     `json:"answered_calls"`
	LastAnswered  *time.Time `json:"last_answered"`
	// LastListed is the name's last tools/list sighting on the server
	// before the range's end, whenever it was; null when never listed.
	LastListed *time.Time `json:"last_listed"`
	Verdict    string     `json:"verdict"`
	// Suggestion is the known tool the name was most likely meant to be,
	// "" when none is near (docs/analytics.md); KnownTools is how many
	// names it was chosen from: the server's tools answered or listed in
	// the range.
	Suggestion string `json:"suggestion"`
	KnownTools int    `json:"known_tools"`
}

// pairKey is one tenant and server.
type pairKey struct{ tenant, server string }

// refusedName is a row of unknown_tools.sql.
type refusedName struct {
	Tenant       string `ch:"tenant_"`
	Server       string `ch:"server_"`
	Tool         string `ch:"tool_"`
	Calls        uint64 `ch:"unknown_n"`
	Sessions     uint64 `ch:"sessions_n"`
	FirstMs      int64  `ch:"first_ms"`
	LastMs       int64  `ch:"last_ms"`
	Reclassified uint64 `ch:"reclassified_n"`
	ReclassMs    int64  `ch:"reclassified_last_ms"`
	OtherRows    uint64 `ch:"other_rows_n"`
}

// maxRefusedNames caps the refused names UnknownTools reads, most refused
// first: each is compared with its server's known tools, and each is set
// apart from them exactly (a name refused beyond the cap counts as known
// when it has an answered-looking row, which may be a replaced copy).
const maxRefusedNames = 100_000

// UnknownTools returns the tool names the servers refused as unknown in
// [f.From, f.To), most refused calls first (then by tenant, server and
// name), each with its verdict and the known tool it was most likely meant
// to be. f.Tool selects a requested name.
func UnknownTools(ctx context.Context, db DB, f Filter, o UnknownToolOptions) ([]UnknownTool, error) {
	if o.Limit <= 0 {
		o.Limit = 100
	}
	var refused []refusedName
	if err := db.Select(ctx, &refused, unknownToolsSQL, append(f.args(), clickhouse.Named("limit", int64(maxRefusedNames)))...); err != nil {
		return nil, fmt.Errorf("unknown tools: %w", err)
	}
	if !slices.ContainsFunc(refused, func(r refusedName) bool { return f.Tool == "" || r.Tool == f.Tool }) {
		return nil, nil
	}
	var known []struct {
		Tenant   string `ch:"tenant_"`
		Server   string `ch:"server_"`
		Tool     string `ch:"tool_"`
		Rows     uint64 `ch:"answered_rows_n"`
		ListedMs int64  `ch:"listed_ms"`
	}
	servers := make([]string, len(refused))
	for i, r := range refused {
		servers[i] = r.Server
	}
	slices.Sort(servers)
	if err := db.Select(ctx, &known, unknownToolsKnownSQL, append(f.args(), clickhouse.Named("servers", slices.Compact(servers)))...); err != nil {
		return nil, fmt.Errorf("unknown tools known: %w", err)
	}

	type key struct{ tenant, server, tool string }
	byName := map[key]refusedName{}
	for _, r := range refused {
		byName[key{r.Tenant, r.Server, r.Tool}] = r
	}
	// A name was answered when it has a call whose latest copy is not
	// UNKNOWN_TOOL: a call with no UNKNOWN_TOOL copy (plain: the name's rows
	// that are not UNKNOWN_TOOL outnumber those of its calls with one), or
	// one of the latter whose latest copy is another (reclassified).
	plain := map[key]bool{}
	listed := map[key]int64{}
	candidates := map[pairKey][]string{}
	for _, k := range known {
		id := key{k.Tenant, k.Server, k.Tool}
		listed[id] = k.ListedMs
		plain[id] = k.Rows > byName[id].OtherRows
		if plain[id] || byName[id].Reclassified > 0 || k.ListedMs >= f.From.UnixMilli() {
			p := pairKey{k.Tenant, k.Server}
			candidates[p] = append(candidates[p], k.Tool)
		}
	}

	out := make([]UnknownTool, 0, min(len(refused), int(o.Limit)))
	var counted []int // the rows whose plain answered calls answered_calls adds
	for _, r := range refused {
		if f.Tool != "" && r.Tool != f.Tool {
			continue
		}
		if len(out) == int(o.Limit) {
			break
		}
		id := key{r.Tenant, r.Server, r.Tool}
		u := UnknownTool{Tenant: r.Tenant, Server: r.Server, Tool: r.Tool, Calls: r.Calls, Sessions: r.Sessions,
			FirstSeen: time.UnixMilli(r.FirstMs).UTC(), LastSeen: time.UnixMilli(r.LastMs).UTC()}
		if r.Reclassified > 0 {
			u.AnsweredCalls, u.LastAnswered = r.Reclassified, msTime(r.ReclassMs)
		}
		if plain[id] {
			counted = append(counted, len(out))
		}
		if ms := listed[id]; ms > 0 {
			u.LastListed = msTime(ms)
		}
		cands := candidates[pairKey{r.Tenant, r.Server}]
		u.KnownTools = len(cands)
		if slices.Contains(cands, r.Tool) {
			u.KnownTools--
		}
		suggestion, match := spelling.Nearest(r.Tool, cands)
		switch {
		case plain[id] || r.Reclassified > 0:
			u.Verdict = VerdictAnswered // a real tool: no suggestion
		case u.LastListed != nil && listed[id] >= r.FirstMs:
			u.Verdict = VerdictListed
		case u.LastListed != nil:
			u.Verdict, u.Suggestion = VerdictRemoved, suggestion
		case match != "":
			u.Verdict, u.Suggestion = string(match), suggestion
		case u.KnownTools > 0:
			u.Verdict = VerdictInvented
		default:
			u.Verdict = VerdictNoKnownTools
		}
		out = append(out, u)
	}
	if err := addPlainAnswers(ctx, db, f, out, counted); err != nil {
		return nil, err
	}
	return out, nil
}

// addPlainAnswers adds to the rows of out at the indexes in rows the calls
// of their names with no UNKNOWN_TOOL copy (unknown_tools_answered.sql):
// answered_calls and the last of them. Most refused names have none, and
// then nothing is read.
func addPlainAnswers(ctx context.Context, db DB, f Filter, out []UnknownTool, rows []int) error {
	if len(rows) == 0 {
		return nil
	}
	var servers, names []string
	for _, i := range rows {
		servers, names = append(servers, out[i].Server), append(names, out[i].Tool)
	}
	slices.Sort(servers)
	slices.Sort(names)
	all, set := toolArgs(slices.Compact(names), maxToolSetBytes)
	var answered []struct {
		Tenant string `ch:"tenant_"`
		Server string `ch:"server_"`
		Tool   string `ch:"tool_"`
		Calls  uint64 `ch:"answered_n"`
		LastMs int64  `ch:"last_ms"`
	}
	if err := db.Select(ctx, &answered, unknownToolsAnsweredSQL, append(f.args(), clickhouse.Named("servers", slices.Compact(servers)), all, set)...); err != nil {
		return fmt.Errorf("unknown tools answered: %w", err)
	}
	for _, a := range answered {
		for _, i := range rows {
			u := &out[i]
			if u.Tenant != a.Tenant || u.Server != a.Server || u.Tool != a.Tool {
				continue
			}
			u.AnsweredCalls += a.Calls
			if u.LastAnswered == nil || a.LastMs > u.LastAnswered.UnixMilli() {
				u.LastAnswered = msTime(a.LastMs)
			}
		}
	}
	return nil
}

// msTime is the UTC time of ms milliseconds since the epoch, by pointer for
// the JSON fields that are null when unknown.
func msTime(ms int64) *time.Time {
	t := time.UnixMilli(ms).UTC()
	return &t
}
