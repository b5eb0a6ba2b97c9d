package compact

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

var (
	//go:embed fold_sightings.sql
	foldSightingsText string
	//go:embed foldable_sightings.sql
	foldableSightingsText string
	//go:embed kept_sightings.sql
	keptSightingsSQL string

	// The deletion and the count before it, over one set of kept sightings.
	foldSightingsSQL     = withKeptSightings(foldSightingsText)
	foldableSightingsSQL = withKeptSightings(foldableSightingsText)
)

// keptMarker is where a statement takes kept_sightings.sql.
const keptMarker = "/* kept_sightings.sql */"

// withKeptSightings returns stmt with kept_sightings.sql, its comment lines
// left out, in place of its one keptMarker; it panics at start-up when
// stmt has no such marker or more than one.
func withKeptSightings(stmt string) string {
	if n := strings.Count(stmt, keptMarker); n != 1 {
		panic(fmt.Sprintf("compact: %d %s markers in a statement, want 1", n, keptMarker))
	}
	var kept []string
	for _, l := range strings.Split(strings.TrimSpace(keptSightingsSQL), "\n") {
		if !strings.HasPrefix(l, "--") {
			kept = append(kept, l)
		}
	}
	return strings.Replace(stmt, keptMarker, strings.Join(kept, "\n"), 1)
}

// SightingsResult is what one Sightings call did.
type SightingsResult struct {
	Cutoff time.Time
	// Before is the number of sightings made before Cutoff, Folded the
	// number of them deleted (0 when there was nothing to fold, and then no
	// mutation ran).
	Before, Folded uint64
	Took           time.Duration
}

// Sightings folds the tool sightings made before cutoff to the ends of
// their unchanged runs within each UTC day (fold_sightings.sql): ingest
// writes one per tool and -tool-sighting-every (an hour), and the table
// keeps its whole history, which every reader of tool_sightings (/tools,
// misclassifications, the tool panels) scans; folded, a tool that keeps
// its definition costs two rows a day. Every change point, every version's
// first and last seen, and the version in force at any time stay as they
// were; only a last seen up to a time inside the folded past moves back, at
// most a day. cutoff should be a UTC midnight: Sightings folds whole days
// then, so that it deletes something at most once a day.
//
// It counts what there is to fold first and returns without a mutation when
// nothing is; otherwise it issues the deletion (ALTER TABLE ... DELETE, a
// mutation on both engines) and waits until the server reports it done,
// polling every poll, for at most wait: the mutation rewrites the table's
// parts in the background, and a mutation that never finishes is reported
// (see system.mutations) rather than waited for. On a cluster db is a
// *Clustered: the mutation runs on every shard's tool_sightings_local, and
// its set of sightings to keep reads the Distributed tool_sightings, every
// shard's: a tool's sightings of a day lie on several shards (the table is
// sharded by its whole sort key), and the run ends are the day's, not a
// shard's.
func Sightings(ctx context.Context, db DB, cutoff time.Time, poll, wait time.Duration) (SightingsResult, error) {
	start := time.Now()
	res := SightingsResult{Cutoff: cutoff}
	// Unix rounds down, as ts holds the second of ts_ms.
	args := []any{clickhouse.Named("cutoff_ms", cutoff.UnixMilli()), clickhouse.Named("cutoff_s", cutoff.Unix())}
	var count []struct {
		Foldable uint64 `ch:"foldable"`
		Before   uint64 `ch:"before_cutoff"`
	}
	if err := db.Select(ctx, &count, foldableSightingsSQL, args...); err != nil {
		return res, fmt.Errorf("count foldable tool sightings: %w", err)
	}
	if len(count) != 1 {
		return res, fmt.Errorf("count foldable tool sightings: %d rows", len(count))
	}
	res.Before = count[0].Before
	if count[0].Foldable == 0 {
		res.Took = time.Since(start)
		return res, nil
	}
	if err := db.Exec(ctx, foldSightingsSQL, args...); err != nil {
		return res, fmt.Errorf("fold tool sightings before %s: %w", cutoff.UTC().Format(time.RFC3339), err)
	}
	// The mutations of tool_sightings not finished yet (both engines have
	// system.mutations with is_done; on a cluster the replicas of a shard
	// apply the same replicated mutation).
	mutations, pendingArgs := SystemRows(db, "mutations", "tool_sightings")
	pendingSQL := "SELECT toUInt64(count()) AS pending FROM " + mutations + " AND is_done = 0"
	deadline := time.Now().Add(wait)
	for {
		var pending []struct {
			N uint64 `ch:"pending"`
		}
		if err := db.Select(ctx, &pending, pendingSQL, pendingArgs...); err != nil {
			return res, fmt.Errorf("wait for the tool sightings fold: %w", err)
		}
		if len(pending) == 1 && pending[0].N == 0 {
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("tool sightings fold still running after %s: see system.mutations", wait)
		}
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("wait for the tool sightings fold: %w", ctx.Err())
		case <-time.After(poll):
		}
	}
	res.Folded = count[0].Foldable
	res.Took = time.Since(start)
	return res, nil
}
