package compact_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/queries"
)

// sightingsStart is the first day of randomSightings; cutoff folds its
// first four days.
var (
	sightingsStart = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	cutoff         = sightingsStart.Add(4 * 24 * time.Hour)
)

// randomSightings is six days of a fleet's tool sightings, about hourly as
// ingest writes them, from seed: each tool keeps its definition or switches
// to one of three, hash 0 among them (returns to an older one included);
// some hours sight two versions at the same instant (two ingest processes),
// some sightings are written twice (a replay), and some fall on midnight
// and on the cutoff itself. Every version has a definition: hash 1 is read-only, 0 and 2 are
// not, so that the version in force decides misclassifications'
// retried_non_idempotent.
func randomSightings(seed uint64) pipeline.ToolRows {
	rng := rand.New(rand.NewPCG(seed, 1))
	var rows pipeline.ToolRows
	defined := map[string]bool{}
	for _, tenant := range []string{"acme", "globex"} {
		for _, server := range []string{"kb", "crm"} {
			for _, tool := range []string{"search", "update", "fetch", "rare"} {
				hash := uint64(rng.IntN(3))
				sight := func(at time.Time, h uint64, ingested int64) {
					rows.Sightings = append(rows.Sightings, pipeline.ToolSighting{Time: at, TimeMs: at.UnixMilli(),
						Tenant: tenant, Server: server, Tool: tool, DefinitionHash: h, IngestedMs: ingested})
					if k := fmt.Sprint(tenant, server, tool, h); !defined[k] {
						defined[k] = true
						rows.Definitions = append(rows.Definitions, pipeline.ToolDef{Tenant: tenant, Server: server,
							Tool: tool, Hash: h, Title: tool, ReadOnlyHint: int8(h % 2), DestructiveHint: -1,
							IdempotentHint: -1, OpenWorldHint: -1, Definition: fmt.Sprintf(`{"name":%q,"v":%d}`, tool, h), IngestedMs: 1})
					}
				}
				every := time.Hour
				if tool == "rare" {
					every = 11 * time.Hour
				}
				for at := sightingsStart.Add(time.Duration(rng.IntN(3600)) * time.Second); at.Before(sightingsStart.Add(6 * 24 * time.Hour)); {
					if rng.IntN(8) == 0 {
						hash = uint64(rng.IntN(3))
					}
					sight(at, hash, 1)
					switch rng.IntN(20) {
					case 0: // another process sights another version at the same instant
						sight(at, uint64(rng.IntN(3)), 1)
					case 1: // a replay writes the sighting again
						sight(at, hash, 2)
					}
					next := at.Add(every + time.Duration(rng.IntN(120)-60)*time.Second)
					if day := next.Truncate(24 * time.Hour); rng.IntN(10) == 0 && day.After(at) {
						next = day // on midnight, and so once in a while on the cutoff
					}
					at = next
				}
			}
		}
	}
	return rows
}

// sightingKey is a sighting's identity in the table (its sorting key).
type sightingKey struct {
	tenant, server, tool string
	ms                   int64
	hash                 uint64
}

// foldReference is what folding before cutoff must leave, computed apart
// from the SQL: per tenant, server, tool and UTC day, the sightings before
// cutoff ordered by (time, hash); kept are the first and the last, and
// every one whose hash differs from its neighbour's; with every copy of a
// kept one, and every sighting from cutoff on.
func foldReference(s []pipeline.ToolSighting, cutoff time.Time) map[sightingKey]bool {
	type group struct {
		tenant, server, tool string
		day                  int64
	}
	groups := map[group][]sightingKey{}
	keep := map[sightingKey]bool{}
	for _, x := range s {
		k := sightingKey{x.Tenant, x.Server, x.Tool, x.TimeMs, x.DefinitionHash}
		if x.TimeMs >= cutoff.UnixMilli() {
			keep[k] = true
			continue
		}
		g := group{x.Tenant, x.Server, x.Tool, x.Time.UTC().Truncate(24 * time.Hour).Unix()}
		groups[g] = append(groups[g], k)
	}
	for _, ks := range groups {
		slices.SortFunc(ks, func(a, b sightingKey) int { return cmp.Or(cmp.Compare(a.ms, b.ms), cmp.Compare(a.hash, b.hash)) })
		for i, k := range ks {
			if i == 0 || i == len(ks)-1 || ks[i-1].hash != k.hash || ks[i+1].hash != k.hash {
				keep[k] = true
			}
		}
	}
	return keep
}

func storedSightings(t *testing.T, e *chtest.Engine) map[sightingKey]bool {
	t.Helper()
	var rows []struct {
		Tenant string `ch:"tenant_"`
		Server string `ch:"server_"`
		Tool   string `ch:"tool_"`
		Ms     int64  `ch:"ms_"`
		Hash   uint64 `ch:"hash_"`
	}
	if err := e.DB.Select(context.Background(), &rows, `SELECT DISTINCT toString(tenant) AS tenant_, toString(server) AS server_,
		toString(tool) AS tool_, ts_ms AS ms_, definition_hash AS hash_ FROM tool_sightings`); err != nil {
		t.Fatal(err)
	}
	out := map[sightingKey]bool{}
	for _, r := range rows {
		out[sightingKey{r.Tenant, r.Server, r.Tool, r.Ms, r.Hash}] = true
	}
	return out
}

// TestSightingsFoldsToTheEndsOfRuns folds random sightings on every engine
// and compares what is left with foldReference; a second fold finds
// nothing to do and runs no mutation.
func TestSightingsFoldsToTheEndsOfRuns(t *testing.T) {
	ctx := context.Background()
	for _, seed := range []uint64{1, 2, 3} {
		rows := randomSightings(seed)
		want := foldReference(rows.Sightings, cutoff)
		for _, e := range chtest.Engines(t) {
			t.Run(fmt.Sprint(seed, "/", e.Name), func(t *testing.T) {
				e.InsertTools(t, rows)
				before := len(storedSightings(t, e))
				var early []struct {
					N uint64 `ch:"n"`
				}
				if err := e.DB.Select(ctx, &early, "SELECT toUInt64(count()) AS n FROM tool_sightings WHERE ts_ms < @c",
					clickhouse.Named("c", cutoff.UnixMilli())); err != nil {
					t.Fatal(err)
				}
				res, err := compact.Sightings(ctx, e.DB, cutoff, 20*time.Millisecond, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				got := storedSightings(t, e)
				for k := range want {
					if !got[k] {
						t.Errorf("%+v was deleted; it ends a run, or is at or after the cutoff", k)
					}
				}
				for k := range got {
					if !want[k] {
						t.Errorf("%+v was kept; it is inside a run before the cutoff", k)
					}
				}
				// Folded counts rows, and a replayed copy not merged yet is a
				// row of its own: at least the distinct sightings folded.
				if res.Before != early[0].N || res.Folded < uint64(before-len(got)) || res.Folded > res.Before {
					t.Errorf("result %+v: want %d sightings before the cutoff, at least %d folded", res, early[0].N, before-len(got))
				}
				if before-len(got) < before/3 {
					t.Errorf("folded %d of %d sightings: the fixture has too few runs to fold", before-len(got), before)
				}
				again, err := compact.Sightings(ctx, e.DB, cutoff, 20*time.Millisecond, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if again.Folded != 0 {
					t.Errorf("second fold deleted %d sightings, want none", again.Folded)
				}
			})
		}
	}
}

// TestSightingsKeepEveryAnswer reads the tool versions (/tools: first and
// last seen, when each version came into force, the version in force) at
// times before, at and after the cutoff, and misclassifications' version in
// force through its retried_non_idempotent kind, before and after a fold:
// every answer is the same, except a last seen up to a time before the
// cutoff, which may move back to the latest sighting kept before that
// time, on the same day.
func TestSightingsKeepEveryAnswer(t *testing.T) {
	ctx := context.Background()
	rows := randomSightings(7)
	var ends []time.Time
	for h := 30; h < 6*24; h += 13 {
		ends = append(ends, sightingsStart.Add(time.Duration(h)*time.Hour+17*time.Minute))
	}
	ends = append(ends, cutoff, cutoff.Add(time.Millisecond), sightingsStart.Add(7*24*time.Hour))
	// A timeout retried with success in the last hour before each end, on
	// every tool, so that retried_non_idempotent names the tools whose
	// version in force then has no hints.
	var calls []pipeline.Call
	for i, to := range ends {
		for _, tenant := range []string{"acme", "globex"} {
			for _, server := range []string{"kb", "crm"} {
				for _, tool := range []string{"search", "update", "fetch", "rare"} {
					at := to.Add(-30 * time.Minute)
					session := fmt.Sprintf("s%d-%s-%s-%s", i, tenant, server, tool)
					for k, cat := range []string{"UPSTREAM_TIMEOUT", "OK"} {
						ts := at.Add(time.Duration(k) * 10 * time.Second)
						calls = append(calls, pipeline.Call{Time: ts, TimeMs: ts.UnixMilli(), DurationMs: 5, Tenant: tenant,
							Server: server, Tool: tool, SessionKey: session, RequestID: fmt.Sprint(k),
							CallID: uint64(len(calls) + 1), Source: "capture", ArgsJSON: "{}", ArgsHash: 1,
							ArgKeys: []string{}, ArgValues: []string{}, HasResponse: 1, IsError: -1, Category: cat,
							IsFailure: uint8(1 - k), DeclaredRetryable: -1, ExpectedRetryable: 1, IngestedMs: 1})
					}
				}
			}
		}
	}
	type answer struct {
		versions []queries.ToolVersion
		risky    []string
	}
	read := func(t *testing.T, e *chtest.Engine) []answer {
		t.Helper()
		var out []answer
		for _, to := range ends {
			f := queries.Filter{From: to.Add(-time.Hour), To: to}
			v, err := queries.ToolVersions(ctx, e.DB, f)
			if err != nil {
				t.Fatal(err)
			}
			m, err := queries.Misclassifications(ctx, e.DB, f, time.Minute, 1)
			if err != nil {
				t.Fatal(err)
			}
			var risky []string
			for _, x := range m {
				if x.Kind == queries.KindRetriedNonIdempotent {
					risky = append(risky, x.Tool+"/"+x.Category)
				}
			}
			out = append(out, answer{v, risky})
		}
		return out
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.InsertTools(t, rows)
			e.Insert(t, calls)
			before := read(t, e)
			if _, err := compact.Sightings(ctx, e.DB, cutoff, 20*time.Millisecond, time.Minute); err != nil {
				t.Fatal(err)
			}
			after := read(t, e)
			var risky, moved, allRisky int
			for i, to := range ends {
				b, a := before[i], after[i]
				risky += len(b.risky)
				if len(b.risky) == 16 {
					allRisky++
				}
				if !slices.Equal(a.risky, b.risky) {
					t.Errorf("to %s: retried_non_idempotent %v after the fold, %v before", to, a.risky, b.risky)
				}
				if len(a.versions) != len(b.versions) {
					t.Errorf("to %s: %d versions after the fold, %d before\n%s\n%s", to, len(a.versions), len(b.versions), brief(a.versions), brief(b.versions))
					continue
				}
				for j := range b.versions {
					vb, va := b.versions[j], a.versions[j]
					if va.LastSeen != vb.LastSeen {
						moved++
						if !to.After(cutoff) && !va.LastSeen.After(vb.LastSeen) && va.LastSeen.Truncate(24*time.Hour).Equal(vb.LastSeen.Truncate(24*time.Hour)) {
							va.LastSeen = vb.LastSeen // moved back within its day: allowed
						}
					}
					if !reflect.DeepEqual(va, vb) {
						t.Errorf("to %s: version after the fold\n%+v\nbefore\n%+v", to, va, vb)
					}
				}
			}
			if risky == 0 || allRisky == len(ends) || moved == 0 {
				t.Errorf("%d retried_non_idempotent rows (every tool at %d of %d ends) and %d last seen moved: the fixture tests less than it says",
					risky, allRisky, len(ends), moved)
			}
		})
	}
}

func brief(vs []queries.ToolVersion) string {
	var out string
	for _, v := range vs {
		out += fmt.Sprintf("%s/%s/%s v%d %s %s..%s in force %v\n", v.Tenant, v.Server, v.Tool, v.Version, v.DefinitionHash[15:], v.FirstSeen.Format("01-02T15:04"), v.LastSeen.Format("01-02T15:04"), v.InForceFrom)
	}
	return out
}
