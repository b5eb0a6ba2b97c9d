package compact

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

var (
	//go:embed rollup_day_inserts.sql
	rollupDayInsertsSQL string
	//go:embed rollup_folds.sql
	rollupFoldsSQL string
	//go:embed fold_rollup_day.sql
	foldRollupDaySQL string
	//go:embed record_rollup_fold.sql
	recordRollupFoldSQL string
	//go:embed superseded_rollup_folds.sql
	supersededRollupFoldsSQL string
	//go:embed drop_rollup_fold_records.sql
	dropRollupFoldRecordsSQL string
	//go:embed drop_rollup_fold_rows.sql
	dropRollupFoldRowsSQL string
)

// RollupResult is what one RollupDays call did.
type RollupResult struct {
	// Folded are the days folded (UTC midnights), Unsettled the days left
	// for a later run because an insert came in the last settle or during
	// the fold.
	Folded, Unsettled []time.Time
	// Superseded is how many earlier folds of the days folded were made at
	// an insert count that has passed; their rows and records are being
	// deleted (mutations the server finishes in the background).
	Superseded int
	Took       time.Duration
}

// RollupDays folds each complete UTC day of the last days before now's day
// whose calls changed since its latest fold into plain counts per tenant,
// server, tool and 5-minute bucket (calls_5m_days): readers of a long
// baseline add those up instead of merging seven days of uniqExact states,
// and the spikes panel its range's distinct calls and latest
// INVALID_ARGUMENT ingests instead of grouping the raw calls
// (schema/013_calls_5m_days.sql). A day is folded when calls brought rows
// to it since the migration that counts them (calls_day_inserts), its
// insert count has no fold yet, and its last insert, by the server's
// clock, is at least settle before now (settle covers the clocks' skew
// too); a fold whose day took an insert while it ran is not recorded and
// is made again by a later run. It is idempotent: a second run with
// nothing inserted folds nothing. Readers ignore any fold whose
// insert count is no longer the day's, so a late insert into a folded day
// sends them back to calls_5m until the day is folded again. It needs a
// single server, as Days does.
func RollupDays(ctx context.Context, db DB, now time.Time, days int, settle time.Duration) (RollupResult, error) {
	start := time.Now()
	var res RollupResult
	if days <= 0 {
		return res, nil
	}
	to := now.UTC().Truncate(24 * time.Hour)
	from := to.AddDate(0, 0, -days)
	span := []any{clickhouse.Named("from_s", from.Unix()), clickhouse.Named("to_s", to.Unix())}
	counts, err := dayInserts(ctx, db, span, now, settle)
	if err != nil {
		return res, err
	}
	var made []dayFold
	if err := db.Select(ctx, &made, rollupFoldsSQL, span...); err != nil {
		return res, fmt.Errorf("list rollup folds: %w", err)
	}
	folded := map[dayFold]bool{}
	for _, m := range made {
		folded[m] = true
	}
	for _, c := range counts {
		if folded[dayFold{c.Day, c.Inserts}] {
			continue
		}
		day := time.Unix(int64(c.Day)*86400, 0).UTC()
		if c.Settled == 0 {
			res.Unsettled = append(res.Unsettled, day)
			continue
		}
		ok, err := foldDay(ctx, db, day, c.Inserts)
		if err != nil {
			return res, err
		}
		if ok {
			res.Folded = append(res.Folded, day)
			n, err := dropSuperseded(ctx, db, day, c.Inserts)
			if err != nil {
				return res, err
			}
			res.Superseded += n
		} else {
			res.Unsettled = append(res.Unsettled, day)
		}
	}
	res.Took = time.Since(start)
	return res, nil
}

// dayFold is a day (days since 1970-01-01) and an insert count it was
// folded at: a row of rollup_folds.sql.
type dayFold struct {
	Day     uint32 `ch:"day_n"`
	Inserts uint64 `ch:"inserts"`
}

// dayCount is one row of rollup_day_inserts.sql.
type dayCount struct {
	Day     uint32 `ch:"day_n"`
	Inserts uint64 `ch:"inserts"`
	Settled uint8  `ch:"settled"`
}

func dayInserts(ctx context.Context, db DB, span []any, now time.Time, settle time.Duration) ([]dayCount, error) {
	var counts []dayCount
	args := append(span[:len(span):len(span)], clickhouse.Named("now_s", now.Unix()), clickhouse.Named("settle_s", int64(settle/time.Second)))
	if err := db.Select(ctx, &counts, rollupDayInsertsSQL, args...); err != nil {
		return nil, fmt.Errorf("count rollup inserts: %w", err)
	}
	return counts, nil
}

// foldDay folds one day counted at inserts, its calls_5m states and its
// raw calls, an hour at a time under one fold id, and records the fold, unless the day's count moved while it
// ran; it reports whether it recorded it. A fold cut short is never
// recorded, so readers never see its rows.
func foldDay(ctx context.Context, db DB, day time.Time, inserts uint64) (bool, error) {
	fold := uint64(time.Now().UnixNano())
	at := []any{clickhouse.Named("day_s", day.Unix()), clickhouse.Named("fold", fold)}
	for h := range int64(24) {
		if err := db.Exec(ctx, foldRollupDaySQL, append(at, clickhouse.Named("from_s", day.Unix()+h*3600))...); err != nil {
			return false, fmt.Errorf("fold rollup day %s: %w", day.Format(time.DateOnly), err)
		}
	}
	after, err := dayInserts(ctx, db, []any{clickhouse.Named("from_s", day.Unix()), clickhouse.Named("to_s", day.Unix()+86400)}, day, 0)
	if err != nil {
		return false, err
	}
	if len(after) != 1 || after[0].Inserts != inserts {
		return false, nil
	}
	if err := db.Exec(ctx, recordRollupFoldSQL, append(at, clickhouse.Named("inserts", inserts))...); err != nil {
		return false, fmt.Errorf("record rollup fold of %s: %w", day.Format(time.DateOnly), err)
	}
	return true, nil
}

// dropSuperseded deletes the rows and records of day's folds made at an
// insert count other than inserts, the count its new fold was made at, and
// returns how many there were. Only those: a fold at the same count may be
// another process's, still being written. Rows of a fold cut short before
// its record stay; readers never take them.
func dropSuperseded(ctx context.Context, db DB, day time.Time, inserts uint64) (int, error) {
	at := []any{clickhouse.Named("day_s", day.Unix())}
	var old []struct {
		Fold uint64 `ch:"fold"`
	}
	if err := db.Select(ctx, &old, supersededRollupFoldsSQL, append(at, clickhouse.Named("inserts", inserts))...); err != nil {
		return 0, fmt.Errorf("list superseded rollup folds of %s: %w", day.Format(time.DateOnly), err)
	}
	if len(old) == 0 {
		return 0, nil
	}
	folds := make([]any, len(old))
	for i, o := range old {
		folds[i] = o.Fold
	}
	at = append(at, clickhouse.Named("folds", clickhouse.GroupSet{Value: folds}))
	for _, q := range []string{dropRollupFoldRecordsSQL, dropRollupFoldRowsSQL} {
		if err := db.Exec(ctx, q, at...); err != nil {
			return 0, fmt.Errorf("delete superseded rollup folds of %s: %w", day.Format(time.DateOnly), err)
		}
	}
	return len(old), nil
}
