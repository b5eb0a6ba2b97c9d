package chtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
)

// InsertTools writes tool definitions, sightings and schema violations:
// through pipeline.Writer on servers, as JSONEachRow on chDB.
func (e *Engine) InsertTools(t testing.TB, rows pipeline.ToolRows) {
	t.Helper()
	if err := e.InsertToolRows(context.Background(), &rows); err != nil {
		t.Fatalf("%s: %v", e.Name, err)
	}
}

// InsertToolRows is InsertTools for callers without a testing.TB.
func (e *Engine) InsertToolRows(ctx context.Context, rows *pipeline.ToolRows) error {
	if e.Conn != nil {
		return pipeline.NewWriter(e.Conn, pipeline.NewMetrics(prometheus.NewRegistry())).WriteToolRows(ctx, rows)
	}
	for _, tbl := range rows.Tables() {
		out := make([]map[string]any, len(tbl.Rows))
		for i, vals := range tbl.Rows {
			r := make(map[string]any, len(tbl.Columns))
			for j, c := range tbl.Columns {
				if tm, ok := vals[j].(time.Time); ok {
					r[c] = tm.UTC().Format("2006-01-02 15:04:05")
				} else {
					r[c] = vals[j]
				}
			}
			out[i] = r
		}
		if err := e.chdb.InsertJSONEachRow(tbl.Table, tbl.Columns, out); err != nil {
			return fmt.Errorf("insert %d rows into %s: %w", len(out), tbl.Table, err)
		}
	}
	return nil
}

// AddToolVersion appends to rows one version of a tool's definition, with
// its readOnlyHint and idempotentHint (-1 when the definition leaves one
// out; the other hints are left out), and its sighting at seen.
func AddToolVersion(rows *pipeline.ToolRows, tenant, server, tool string, hash uint64, readOnly, idempotent int8, seen time.Time) {
	rows.Definitions = append(rows.Definitions, pipeline.ToolDef{Tenant: tenant, Server: server, Tool: tool, Hash: hash,
		Title: tool, ReadOnlyHint: readOnly, DestructiveHint: -1, IdempotentHint: idempotent, OpenWorldHint: -1,
		Definition: `{"name":"` + tool + `"}`, IngestedMs: 1})
	rows.Sightings = append(rows.Sightings, pipeline.ToolSighting{Time: seen, TimeMs: seen.UnixMilli(),
		Tenant: tenant, Server: server, Tool: tool, DefinitionHash: hash, IngestedMs: 1})
}

// FleetDefinitions are tool definitions for the random fleets of the
// differential tests (tenants acme, globex and initech; servers kb and crm;
// tools update, search, login and fetch), seen relative to start. On every
// server of every tenant: update declares no hints (not idempotent), search
// is read-only; login declares idempotentHint false on acme's servers and
// has no definition elsewhere (hints unknown: never listed); fetch declares
// no hints until start+90m, when a version that is idempotent replaces it.
// nonIdempotent returns, for the end of a range, the (tenant, server, tool)s
// whose definition then in force declares neither idempotentHint nor
// readOnlyHint true.
func FleetDefinitions(start time.Time) (rows pipeline.ToolRows, nonIdempotent func(to time.Time) map[[3]string]bool) {
	tenants, servers := []string{"acme", "globex", "initech"}, []string{"kb", "crm"}
	hash := uint64(0)
	add := func(tenant, server, tool string, readOnly, idempotent int8, seen time.Duration) {
		hash++
		AddToolVersion(&rows, tenant, server, tool, hash, readOnly, idempotent, start.Add(seen))
	}
	for _, tenant := range tenants {
		for _, server := range servers {
			add(tenant, server, "update", -1, -1, -2*time.Hour)
			add(tenant, server, "search", 1, -1, -2*time.Hour)
			if tenant == "acme" {
				add(tenant, server, "login", -1, 0, -2*time.Hour)
			}
			add(tenant, server, "fetch", -1, -1, -2*time.Hour)
			add(tenant, server, "fetch", -1, 1, 90*time.Minute)
		}
	}
	return rows, func(to time.Time) map[[3]string]bool {
		out := map[[3]string]bool{}
		for _, tenant := range tenants {
			for _, server := range servers {
				out[[3]string{tenant, server, "update"}] = true
				out[[3]string{tenant, server, "login"}] = tenant == "acme"
				out[[3]string{tenant, server, "fetch"}] = !to.After(start.Add(90 * time.Minute))
			}
		}
		return out
	}
}

// ReplayedViolations is the call_violations rows of n random calls in [start,
// start+span) over two tenants, two servers and three tools, and of their
// re-ingests: a third of the calls are ingested again (some twice), with
// another category, definition version, detail or suggestion under the same
// identity, as a replay under new rules or a new sighting would write them.
// A call's arguments either pass or break the schema. Each ingest of a call
// says that its arguments were validated in one of the two ways ingest has
// had: before schema migration 024, one call_violations row with an empty
// reason when they passed; since, args_validated 1 on its calls row (calls,
// which also holds a tenth of the calls not validated at all, their
// argument violations left out). The differential tests of queries/,
// dashboards/ and compact/ read these against the FINAL definitions.
func ReplayedViolations(seed uint64, n int, start time.Time, span time.Duration) (rows, replays []pipeline.Violation, calls []pipeline.Call) {
	rng := rand.New(rand.NewPCG(seed, seed))
	cats := []classify.Category{classify.OK, classify.OK, classify.InvalidArgument, classify.EmptyResult, classify.Internal}
	type fault struct{ side, path, reason string }
	faults := []fault{
		{pipeline.SideArguments, "department", "not_in_enum"}, {pipeline.SideArguments, "q", "missing_required"},
		{pipeline.SideArguments, "limit", "out_of_range"}, {pipeline.SideArguments, "limit", "wrong_type"},
		{pipeline.SideResult, "status", "not_in_enum"}, {pipeline.SideResult, "$", "missing_structured_content"},
	}
	for i := range n {
		ts := start.Add(time.Duration(rng.Int64N(int64(span))))
		cat := cats[rng.IntN(len(cats))]
		base := pipeline.Violation{Time: ts.Truncate(time.Second), TimeMs: ts.UnixMilli(),
			Tenant: []string{"acme", "globex"}[rng.IntN(2)], Server: []string{"kb", "crm"}[rng.IntN(2)],
			Tool: []string{"search", "lookup", "export"}[rng.IntN(3)], CallID: uint64(i + 1),
			DefinitionHash: uint64(rng.IntN(3) + 1), Category: string(cat), IngestedMs: 1}
		if cat.Failure() {
			base.IsFailure = 1
		}
		validated := rng.IntN(10) != 0
		flag := uint8(0)
		if validated {
			flag = 1
		}
		callRow := func(v pipeline.Violation, regime int) {
			if regime == 1 || !validated {
				calls = append(calls, pipeline.Call{Time: v.Time, TimeMs: v.TimeMs, Tenant: v.Tenant, Server: v.Server, Tool: v.Tool,
					SessionKey: fmt.Sprint("s", v.CallID%7), CallID: v.CallID, Category: v.Category, IsFailure: v.IsFailure,
					IngestedMs: v.IngestedMs, ArgsValidated: flag * uint8(regime), Source: "capture", ContentBlocks: -1})
			}
		}
		// marker is the empty row of old ingests (regime 0) of passing arguments.
		marker := func(call []pipeline.Violation, v pipeline.Violation, regime int) []pipeline.Violation {
			if validated && regime == 0 && !slices.ContainsFunc(call, func(v pipeline.Violation) bool { return v.Side == pipeline.SideArguments }) {
				v.Side, v.Path, v.Reason, v.Detail, v.Suggestion = pipeline.SideArguments, "", "", "", ""
				return append(call, v)
			}
			return call
		}
		var call []pipeline.Violation
		for _, k := range rng.Perm(len(faults))[:rng.IntN(3)] {
			if !validated && faults[k].side == pipeline.SideArguments {
				continue
			}
			v := base
			v.Side, v.Path, v.Reason = faults[k].side, faults[k].path, faults[k].reason
			v.Detail = fmt.Sprintf("detail %d", rng.IntN(3)) // wrong_type's varies by call
			if rng.IntN(2) == 0 {
				v.Suggestion = "finance"
			}
			call = append(call, v)
		}
		regime := rng.IntN(2)
		rows = append(rows, marker(call, base, regime)...)
		callRow(base, regime)
		for again := int64(2); rng.IntN(3) == 0 && again <= 3; again++ {
			change := rng.IntN(4)
			cat := cats[rng.IntN(len(cats))]
			regime := rng.IntN(2)
			b := base
			b.IngestedMs = again
			for _, v := range marker(call, b, regime) {
				v.IngestedMs = again
				switch change {
				case 0:
					v.Category, v.IsFailure = string(cat), 0
					if cat.Failure() {
						v.IsFailure = 1
					}
				case 1:
					v.DefinitionHash = uint64(rng.IntN(3) + 1)
				case 2:
					if v.Reason != "" {
						v.Detail, v.Suggestion = fmt.Sprintf("detail %d", rng.IntN(3)), ""
					}
				} // 3: unchanged, a resend
				replays = append(replays, v)
			}
			if change == 0 {
				b.Category, b.IsFailure = string(cat), 0
				if cat.Failure() {
					b.IsFailure = 1
				}
			}
			callRow(b, regime)
		}
	}
	return rows, replays, calls
}
