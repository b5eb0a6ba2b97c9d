package queries_test

import (
	"context"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/queries"
)

// The schema-violations endpoint's rows and denominator over
// call_violations FINAL: the definition queries.SchemaViolations must
// answer as.
var (
	//go:embed testdata/schema_violations_final.sql
	schemaViolationsDefinitionSQL string
	//go:embed testdata/schema_validated_final.sql
	schemaValidatedDefinitionSQL string
)

// definitionViolations answers SchemaViolations from the definition.
func definitionViolations(t *testing.T, db queries.DB, f queries.Filter, o queries.SchemaViolationOptions) []queries.SchemaViolation {
	t.Helper()
	all, tenants := 0, f.Tenants
	if len(tenants) == 0 {
		all, tenants = 1, []string{""}
	}
	args := []any{
		clickhouse.Named("from_s", f.From.Unix()), clickhouse.Named("to_s", f.To.Unix()),
		clickhouse.Named("from_ms", f.From.UnixMilli()), clickhouse.Named("to_ms", f.To.UnixMilli()),
		clickhouse.Named("tenant", f.Tenant), clickhouse.Named("server", f.Server), clickhouse.Named("tool", f.Tool),
		clickhouse.Named("all_tenants", all), clickhouse.Named("tenants", tenants),
		clickhouse.Named("min_calls", o.MinCalls), clickhouse.Named("limit", o.Limit),
	}
	var raw []struct {
		Tool       string `ch:"tool_name"`
		Hash       uint64 `ch:"hash_"`
		Side       string `ch:"side_"`
		Path       string `ch:"path_"`
		Reason     string `ch:"reason_"`
		Suggestion string `ch:"suggestion_"`
		Detail     string `ch:"detail_"`
		Calls      uint64 `ch:"calls_n"`
		Invalid    uint64 `ch:"invalid_n"`
		Accepted   uint64 `ch:"accepted_n"`
	}
	if err := db.Select(context.Background(), &raw, schemaViolationsDefinitionSQL, args...); err != nil {
		t.Fatalf("definition: %v", err)
	}
	var validated []struct {
		Tool string `ch:"tool_name"`
		N    uint64 `ch:"validated_n"`
	}
	if err := db.Select(context.Background(), &validated, schemaValidatedDefinitionSQL, args...); err != nil {
		t.Fatalf("definition, validated calls: %v", err)
	}
	byTool := map[string]uint64{}
	for _, v := range validated {
		byTool[v.Tool] = v.N
	}
	var out []queries.SchemaViolation
	for _, r := range raw {
		v := queries.SchemaViolation{Tool: r.Tool, DefinitionHash: queries.HashString(r.Hash), Side: r.Side, Path: r.Path,
			Reason: r.Reason, Detail: r.Detail, Suggestion: r.Suggestion, Calls: r.Calls, InvalidArgumentCalls: r.Invalid,
			AcceptedCalls: r.Accepted, ValidatedCalls: byTool[r.Tool]}
		if v.ValidatedCalls > 0 {
			v.Share = float64(v.Calls) / float64(v.ValidatedCalls)
		}
		out = append(out, v)
	}
	return out
}

// genViolations is the call_violations rows of n random calls in [start,
// start+span) over two tenants, two servers and three tools, and of their
// re-ingests: a third of the calls are ingested again (some twice), with
// another category, definition version, detail or suggestion under the same
// identity, as a replay under new rules or a new sighting would write them.
func genViolations(seed uint64, n int, start time.Time, span time.Duration) (rows, replays []pipeline.Violation) {
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
		var call []pipeline.Violation
		for _, k := range rng.Perm(len(faults))[:rng.IntN(3)] {
			v := base
			v.Side, v.Path, v.Reason = faults[k].side, faults[k].path, faults[k].reason
			v.Detail = fmt.Sprintf("detail %d", rng.IntN(3)) // wrong_type's varies by call
			if rng.IntN(2) == 0 {
				v.Suggestion = "finance"
			}
			call = append(call, v)
		}
		if !slices.ContainsFunc(call, func(v pipeline.Violation) bool { return v.Side == pipeline.SideArguments }) {
			v := base
			v.Side = pipeline.SideArguments // the arguments passed
			call = append(call, v)
		}
		rows = append(rows, call...)
		for again := int64(2); rng.IntN(3) == 0 && again <= 3; again++ {
			change := rng.IntN(4)
			cat := cats[rng.IntN(len(cats))]
			for _, v := range call {
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
		}
	}
	return rows, replays
}

// TestSchemaViolationsMatchTheDefinition compares SchemaViolations, which
// reads call_violations without FINAL, with the definition over FINAL, on
// random calls and their re-ingests stored in separate parts, under
// filters, on every engine.
func TestSchemaViolationsMatchTheDefinition(t *testing.T) {
	rows, replays := genViolations(20261202, 3000, t0, 3*time.Hour)
	changed := 0
	for _, r := range replays {
		if r.IngestedMs > 1 {
			changed++
		}
	}
	if changed < 500 {
		t.Fatalf("only %d re-ingested rows: the test would prove little", changed)
	}
	h := func(d time.Duration) time.Time { return t0.Add(d) }
	cases := []struct {
		f queries.Filter
		o queries.SchemaViolationOptions
	}{
		{queries.Filter{From: h(0), To: h(3 * time.Hour)}, queries.SchemaViolationOptions{Limit: 10000}},
		{queries.Filter{From: h(30*time.Minute + 250*time.Millisecond), To: h(2 * time.Hour)}, queries.SchemaViolationOptions{Limit: 10000}},
		{queries.Filter{From: h(0), To: h(3 * time.Hour), Tenant: "acme"}, queries.SchemaViolationOptions{Limit: 10000}},
		{queries.Filter{From: h(0), To: h(3 * time.Hour), Server: "kb", Tool: "search"}, queries.SchemaViolationOptions{Limit: 10000}},
		{queries.Filter{From: h(0), To: h(3 * time.Hour), Tenants: []string{"globex"}}, queries.SchemaViolationOptions{Limit: 10000}},
		{queries.Filter{From: h(0), To: h(3 * time.Hour)}, queries.SchemaViolationOptions{MinCalls: 20, Limit: 7}},
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			// Originals and re-ingests in separate inserts: separate parts
			// that a merge may or may not have folded when the queries run.
			e.InsertTools(t, pipeline.ToolRows{Violations: rows})
			e.InsertTools(t, pipeline.ToolRows{Violations: replays})
			for _, c := range cases {
				name := fmt.Sprintf("[%s, %s) tenant=%q tenants=%q server=%q tool=%q %+v",
					c.f.From.Format("15:04:05.000"), c.f.To.Format("15:04:05.000"), c.f.Tenant, c.f.Tenants, c.f.Server, c.f.Tool, c.o)
				want := definitionViolations(t, e.DB, c.f, c.o)
				if len(want) < 5 {
					t.Fatalf("%s: %d rows in the definition: the case proves little", name, len(want))
				}
				got, err := queries.SchemaViolations(context.Background(), e.DB, c.f, c.o)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !equalRows(got, want) {
					t.Errorf("%s: differs from the definition\n got %s\nwant %s", name, dump(got), dump(want))
				}
			}
		})
	}
}
