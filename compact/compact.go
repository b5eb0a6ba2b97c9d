// Package compact folds data that ClickHouse keeps more of than the
// answers need: the copies of re-ingested calls (Days), now where the
// background merges would fold them some time later, the old tool
// sightings between the ends of unchanged runs (Sightings), and complete
// hours of the calls_5m rollup's distinct-call states and of the raw calls
// into plain counts (RollupHours).
//
// A call ingested again (a replay of old captures, to reclassify them under
// new rules) is a second row with the same identity until a merge of the
// ReplacingMergeTree keeps only the latest. Every query counts such a call
// once, but reads and sets aside each copy: over a day stored twice the
// overview took 5-6x as long on 18.16 (BENCHMARKS.md, eleventh round).
// Copies written soon after their originals are folded by the first merges;
// a day ingested again in bulk can stay doubled for long, because the
// server waits to merge large parts.
package compact

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

var (
	//go:embed optimize_day.sql
	optimizeDaySQL string
	//go:embed day_copies.sql
	dayCopiesSQL string
)

// dayAttempts and dayPause bound Days' retries of a day whose merge the
// server skipped: five merges, 1, 2, 4 and 8 s apart.
const (
	dayAttempts = 5
	dayPause    = time.Second
)

// DB is what Days, Sightings and RollupHours need: clickhouse-go's driver.Conn, or chDB
// in tests.
type DB interface {
	Exec(ctx context.Context, query string, args ...any) error
	Select(ctx context.Context, dest any, query string, args ...any) error
}

// DayOf is the daily partition of the calls table (PARTITION BY
// toYYYYMMDD(ts), ts in UTC) that holds a call made at t: 20261128.
func DayOf(t time.Time) uint32 {
	y, m, d := t.UTC().Date()
	return uint32(y*10000 + int(m)*100 + d)
}

// Days merges each of the given daily partitions of the calls table into
// one part (OPTIMIZE TABLE calls PARTITION day FINAL), which keeps only the
// latest ingest of every call, in the order given. A merge rewrites every
// row of its day, so it costs what the day weighs: run it once after a bulk
// re-ingest, not on a schedule. done, when not nil, is told of each day
// folded and how long it took. A server skips an OPTIMIZE without an error
// when a background merge holds some of the day's parts (as one does soon
// after a bulk insert), so Days counts the day's copies after each merge
// and merges again, up to dayAttempts times, until none is left. Days
// stops at the first error, naming the day. On a cluster db is a
// *Clustered, and each day's calls_local is merged on every shard
// (OPTIMIZE ... ON CLUSTER); a replica that has not fetched its shard's
// merged part yet shows copies, and costs a merge more.
func Days(ctx context.Context, db DB, days []uint32, done func(day uint32, took time.Duration)) error {
	for _, day := range days {
		start := time.Now()
		if err := foldDay(ctx, db, day, dayPause); err != nil {
			return fmt.Errorf("fold partition %d: %w", day, err)
		}
		if done != nil {
			done(day, time.Since(start))
		}
	}
	return nil
}

// foldDay merges day until it holds no copies, pausing pause, then twice
// as long each time, between merges.
func foldDay(ctx context.Context, db DB, day uint32, pause time.Duration) error {
	from, err := time.Parse("20060102", fmt.Sprint(day))
	if err != nil {
		return fmt.Errorf("not a day: %w", err)
	}
	for attempt := 1; ; attempt++ {
		if err := db.Exec(ctx, optimizeDaySQL, clickhouse.Named("partition", day)); err != nil {
			return err
		}
		var left []struct {
			Copies uint64 `ch:"copies"`
		}
		if err := db.Select(ctx, &left, dayCopiesSQL, clickhouse.Named("from_s", from.Unix())); err != nil {
			return fmt.Errorf("count copies: %w", err)
		}
		if len(left) != 1 {
			return fmt.Errorf("count copies: %d rows", len(left))
		}
		if left[0].Copies == 0 {
			return nil
		}
		if attempt == dayAttempts {
			return fmt.Errorf("%d copies left after %d merges (the server skips a merge while another holds the day's parts): run it again later", left[0].Copies, attempt)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause *= 2
	}
}
