package queries_test

import (
	"context"
	_ "embed"
	"fmt"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/pipeline"
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
	out, err := queries.SchemaViolationsFrom(context.Background(), db, f, o, schemaViolationsDefinitionSQL, schemaValidatedDefinitionSQL)
	if err != nil {
		t.Fatalf("definition: %v", err)
	}
	return out
}

// TestSchemaViolationsMatchTheDefinition compares SchemaViolations, which
// reads call_violations without FINAL, with the definition over FINAL, on
// random calls and their re-ingests stored in separate parts, under
// filters, on every engine: before the fold, with every complete hour
// folded (the hours that lie whole in the range are then read from
// violations_folded), after a late replay makes some folds stale, refolded,
// and with folds that lack the table's mark (made before it existed).
// Counts added to the folds must change the answer, so that it is shown to
// read them.
func TestSchemaViolationsMatchTheDefinition(t *testing.T) {
	ctx := context.Background()
	rows, replays, calls := chtest.ReplayedViolations(20261202, 3000, t0, 3*time.Hour)
	changed := 0
	for _, r := range replays {
		if r.IngestedMs > 1 {
			changed++
		}
	}
	if changed < 500 {
		t.Fatalf("only %d re-ingested rows: the test would prove little", changed)
	}
	var late []pipeline.Violation // a fifth of the calls replayed once more, reclassified
	for _, v := range rows {
		if v.CallID%5 == 0 {
			v.IngestedMs = 9
			v.Category, v.IsFailure = "INVALID_ARGUMENT", 1
			v.Suggestion, v.Detail = "later", "later detail"
			late = append(late, v)
		}
	}
	h := func(d time.Duration) time.Time { return t0.Add(d) }
	cases := []struct {
		f queries.Filter
		o queries.SchemaViolationOptions
	}{
		{queries.Filter{From: h(0), To: h(3 * time.Hour)}, queries.SchemaViolationOptions{Limit: 10000}},
		{queries.Filter{From: h(30*time.Minute + 250*time.Millisecond), To: h(2 * time.Hour)}, queries.SchemaViolationOptions{Limit: 10000}},
		{queries.Filter{From: h(0), To: h(2*time.Hour + 30*time.Minute + 999*time.Millisecond)}, queries.SchemaViolationOptions{Limit: 10000}},
		{queries.Filter{From: h(0), To: h(3 * time.Hour), Tenant: "acme"}, queries.SchemaViolationOptions{Limit: 10000}},
		{queries.Filter{From: h(0), To: h(3 * time.Hour), Server: "kb", Tool: "search"}, queries.SchemaViolationOptions{Limit: 10000}},
		{queries.Filter{From: h(0), To: h(3 * time.Hour), Tenants: []string{"globex"}}, queries.SchemaViolationOptions{Limit: 10000}},
		{queries.Filter{From: h(0), To: h(3 * time.Hour)}, queries.SchemaViolationOptions{MinCalls: 20, Limit: 7}},
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			check := func(state string) {
				t.Helper()
				for _, c := range cases {
					name := fmt.Sprintf("%s: [%s, %s) tenant=%q tenants=%q server=%q tool=%q %+v", state,
						c.f.From.Format("15:04:05.000"), c.f.To.Format("15:04:05.000"), c.f.Tenant, c.f.Tenants, c.f.Server, c.f.Tool, c.o)
					want := definitionViolations(t, e.DB, c.f, c.o)
					if len(want) < 5 {
						t.Fatalf("%s: %d rows in the definition: the case proves little", name, len(want))
					}
					got, err := queries.SchemaViolations(ctx, e.DB, c.f, c.o)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if !equalRows(got, want) {
						t.Errorf("%s: differs from the definition\n got %s\nwant %s", name, dump(got), dump(want))
					}
				}
			}
			fold := func() {
				t.Helper()
				if _, err := compact.RollupHours(ctx, e.DB, time.Now(), time.Since(t0)+48*time.Hour, 0); err != nil {
					t.Fatal(err)
				}
			}
			// Originals and re-ingests in separate inserts: separate parts
			// that a merge may or may not have folded when the queries run.
			e.InsertTools(t, pipeline.ToolRows{Violations: rows})
			e.InsertTools(t, pipeline.ToolRows{Violations: replays})
			e.Insert(t, calls)
			check("raw")
			fold()
			check("folded")
			e.InsertTools(t, pipeline.ToolRows{Violations: late}) // the folds of the hours it touches are no longer current
			check("late replay")
			fold()
			check("refolded")
			// Counts added to the current folds (every violating call and
			// every validated call once more) change the answer over them.
			answer := func() string {
				t.Helper()
				got, err := queries.SchemaViolations(ctx, e.DB, cases[0].f, cases[0].o)
				if err != nil {
					t.Fatal(err)
				}
				return dump(got)
			}
			before := answer()
			err := e.DB.Exec(ctx, `INSERT INTO violations_folded (hour, fold, tenant, server, tool, side, path, reason, definition_hash, suggestion, detail, calls, invalid, accepted)
				SELECT hour, fold, tenant, server, tool, side, path, reason, definition_hash, suggestion, detail, calls, invalid, accepted
				FROM violations_folded WHERE side != '' AND (hour, fold) IN (SELECT hour, fold FROM calls_5m_current_folds)`)
			if err != nil {
				t.Fatal(err)
			}
			if answer() == before {
				t.Errorf("the answer over folded hours is unchanged with their folded counts doubled: it does not read them")
			}
			if err := e.DB.Exec(ctx, "TRUNCATE TABLE violations_folded"); err != nil {
				t.Fatal(err)
			}
			check("unmarked folds")
		})
	}
}
