package compact

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"slices"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

var (
	//go:embed rollup_hour_inserts.sql
	rollupHourInsertsSQL string
	//go:embed rollup_folds.sql
	rollupFoldsSQL string
	//go:embed fold_rollup_hour.sql
	foldRollupHourSQL string
	//go:embed fold_rollup_hour_sums.sql
	foldRollupHourSumsSQL string
	//go:embed fold_copies_hour.sql
	foldCopiesHourSQL string
	//go:embed fold_latest_hour.sql
	foldLatestHourSQL string
	//go:embed record_rollup_fold.sql
	recordRollupFoldSQL string
	//go:embed superseded_rollup_folds.sql
	supersededRollupFoldsSQL string
	//go:embed drop_rollup_fold_records.sql
	dropRollupFoldRecordsSQL string
	//go:embed drop_rollup_fold_rows.sql
	dropRollupFoldRowsSQL string
	//go:embed drop_rollup_fold_sums.sql
	dropRollupFoldSumsSQL string
	//go:embed drop_rollup_fold_copies.sql
	dropRollupFoldCopiesSQL string
	//go:embed drop_rollup_fold_latest.sql
	dropRollupFoldLatestSQL string
	//go:embed fold_violations_hour.sql
	foldViolationsHourSQL string
	//go:embed fold_violation_outcomes_hour.sql
	foldViolationOutcomesHourSQL string
	//go:embed drop_rollup_fold_violations.sql
	dropRollupFoldViolationsSQL string
	//go:embed drop_rollup_fold_outcomes.sql
	dropRollupFoldOutcomesSQL string
	//go:embed fold_invalid_args_hour.sql
	foldInvalidArgsHourSQL string
	//go:embed drop_rollup_fold_invalid_args.sql
	dropRollupFoldInvalidArgsSQL string
	//go:embed fold_categories_hour.sql
	foldCategoriesHourSQL string
	//go:embed drop_rollup_fold_categories.sql
	dropRollupFoldCategoriesSQL string
	//go:embed fold_flags_hour.sql
	foldFlagsHourSQL string
	//go:embed drop_rollup_fold_flags.sql
	dropRollupFoldFlagsSQL string
	//go:embed fold_sessions_hour.sql
	foldSessionsHourSQL string
	//go:embed drop_rollup_fold_sessions.sql
	dropRollupFoldSessionsSQL string
	//go:embed quiet_hour_rows.sql
	quietHourRowsSQL string
	//go:embed count_quiet_hours.sql
	countQuietHoursSQL string
	//go:embed quiet_marks_copies.sql
	quietMarksCopiesSQL string
	//go:embed quiet_marks_latest.sql
	quietMarksLatestSQL string
	//go:embed quiet_marks_violations.sql
	quietMarksViolationsSQL string
	//go:embed quiet_marks_outcomes.sql
	quietMarksOutcomesSQL string
	//go:embed quiet_marks_invalid_args.sql
	quietMarksInvalidArgsSQL string
	//go:embed quiet_marks_categories.sql
	quietMarksCategoriesSQL string
	//go:embed quiet_marks_flags.sql
	quietMarksFlagsSQL string
	//go:embed quiet_marks_sessions.sql
	quietMarksSessionsSQL string
	//go:embed record_quiet_rollup_folds.sql
	recordQuietRollupFoldsSQL string
)

// rollupFoldSteps are the statements of an hour's fold (foldHour), in
// order, each with what it writes for an hour without calls or violations
// (quiet, for all the quiet hours of a run at once: recordQuietHours;
// empty when that is nothing).
var rollupFoldSteps = [...]struct{ fold, quiet, what string }{
	{foldRollupHourSQL, "", "fold rollup hour"},
	{foldRollupHourSumsSQL, "", "sum rollup hour"},
	{foldCopiesHourSQL, quietMarksCopiesSQL, "list copied calls of hour"},
	{foldLatestHourSQL, quietMarksLatestSQL, "record copied calls' latest ingests of hour"},
	{foldViolationsHourSQL, quietMarksViolationsSQL, "fold schema violations of hour"},
	{foldViolationOutcomesHourSQL, quietMarksOutcomesSQL, "fold schema violation outcomes of hour"},
	{foldInvalidArgsHourSQL, quietMarksInvalidArgsSQL, "fold INVALID_ARGUMENT arguments of hour"},
	{foldCategoriesHourSQL, quietMarksCategoriesSQL, "fold calls per category of hour"},
	{foldFlagsHourSQL, quietMarksFlagsSQL, "fold calls per category and flag of hour"},
	{foldSessionsHourSQL, quietMarksSessionsSQL, "fold session keys of hour"},
}

// RollupResult is what one RollupHours call did.
type RollupResult struct {
	// Folded are the hours folded (their starts, UTC), Quiet the hours
	// without calls recorded as empty folds, Unsettled the hours left for a later
	// run because an insert came in the last settle or during the fold.
	Folded, Quiet, Unsettled []time.Time
	// Superseded is how many earlier folds of the hours folded were made
	// at an insert count that has passed, or at the same count before the
	// folds listed their hour's copies or held its violations; their rows
	// and records are being
	// deleted (mutations the server finishes in the background).
	Superseded int
	Took       time.Duration
}

// RollupHours folds each complete UTC hour of the span before now's hour
// whose calls changed since its latest fold into plain counts per tenant,
// server, tool and 5-minute bucket (calls_5m_folded), their sums per hour
// (calls_1h_folded, for readers whose buckets are whole hours), the list
// of the call ids it stores more than once (calls_copies_folded) and their
// latest ingests (calls_latest_folded): readers of a long baseline add
// those up instead of merging seven days of uniqExact states, the spikes
// panel its range's distinct calls and latest INVALID_ARGUMENT ingests
// instead of grouping the raw calls, the readers that set re-ingested copies
// aside look their call ids up instead of grouping every call id of the
// hour, and empty results weighs their rows by the latest ingest
// (schema/013_calls_5m_folded.sql, 016_calls_1h_folded.sql,
// 017_calls_copies_folded.sql, 020_calls_latest_folded.sql). It folds the
// hour's schema violations too, per path (violations_folded, with the
// validated calls per tool) and per second and outcome
// (violation_outcomes_folded), which the schema panels add up instead of
// grouping every validated call (022, 023), and its INVALID_ARGUMENT calls
// per session and argument (invalid_args_folded, 025), which the top
// offending arguments panel adds up instead of reading the range's argument
// arrays again, and its calls per tool and category
// (calls_categories_folded, 029), which Misclassified retryables adds up
// instead of merging their states, and its calls per category of their
// latest ingest with the misflagged among them (calls_flags_folded, 030),
// which the API's misflagged rows and the overview add up instead of
// counting every call of the range, and its session keys with their tools
// (sessions_folded, 043), whose union the overview counts instead of the
// distinct keys of every call. An hour is folded when calls
// or violations brought rows to it since the migration that counts them
// (calls_hour_inserts), or it is a quiet hour (none did, between two of
// the span's hours that some did, and it holds no rows, which it then
// counts as 0 inserts, countQuietHours, and records as an empty fold
// without reading it, recordQuietHours), its insert count has no fold yet
// (or only one made before the folds listed their hour's copies and their
// latest ingests and held its violations, INVALID_ARGUMENT arguments,
// calls per category, flags and session keys),
// and its last insert, by the server's clock, is at least settle before
// now (settle covers the clocks' skew too); a fold whose hour took an
// insert while it ran is not recorded and is made again by a later run. It
// is idempotent: a second run with nothing inserted folds nothing. Readers
// ignore any fold whose insert count is no longer the hour's, so a late
// insert into a folded hour sends them back to calls_5m and the raw calls
// until the hour is folded again. On a cluster db is a *Clustered: the
// fold reads the Distributed tables, writes every replica of each shard
// before it records a fold, and deletes superseded folds on every shard.
func RollupHours(ctx context.Context, db DB, now time.Time, span, settle time.Duration) (RollupResult, error) {
	start := time.Now()
	var res RollupResult
	if span < time.Hour {
		return res, nil
	}
	to := now.UTC().Truncate(time.Hour)
	from := to.Add(-span.Truncate(time.Hour))
	window := []any{clickhouse.Named("from_s", from.Unix()), clickhouse.Named("to_s", to.Unix())}
	counts, err := hourInserts(ctx, db, window, now, settle)
	if err != nil {
		return res, err
	}
	quiet, err := countQuietHours(ctx, db, counts, now, settle)
	if err != nil {
		return res, err
	}
	counts = append(counts, quiet...)
	fresh := map[int64]bool{} // quiet hours found without rows
	for _, q := range quiet {
		fresh[q.Hour] = true
	}
	slices.SortFunc(counts, func(a, b hourCount) int { return cmp.Compare(a.Hour, b.Hour) })
	var made []hourFold
	if err := db.Select(ctx, &made, rollupFoldsSQL, window...); err != nil {
		return res, fmt.Errorf("list rollup folds: %w", err)
	}
	folded := map[hourFold]bool{}
	for _, m := range made {
		folded[m] = true
	}
	// A quiet hour counted at 0 by an earlier run whose fold was never
	// recorded (a run cut short) is recorded as the new ones are, once it
	// is found without rows again.
	var zero []int64
	for _, c := range counts {
		if c.Inserts == 0 && c.Settled == 1 && !fresh[c.Hour] && !folded[hourFold{c.Hour, 0}] {
			zero = append(zero, c.Hour)
		}
	}
	if len(zero) > 0 {
		with, err := hoursWithRows(ctx, db, zero)
		if err != nil {
			return res, err
		}
		for _, h := range zero {
			if !with[h] {
				fresh[h] = true
			}
		}
	}
	var current []madeFold // the hours folded now
	var empty []int64      // the quiet hours to record without a fold
	for _, c := range counts {
		if folded[hourFold{c.Hour, c.Inserts}] {
			continue
		}
		hour := time.Unix(c.Hour, 0).UTC()
		if c.Settled == 0 {
			res.Unsettled = append(res.Unsettled, hour)
			continue
		}
		if fresh[c.Hour] {
			empty = append(empty, c.Hour)
			continue
		}
		fold, ok, err := foldHour(ctx, db, hour, c.Inserts)
		if err != nil {
			return res, err
		}
		if !ok {
			res.Unsettled = append(res.Unsettled, hour)
			continue
		}
		if c.Inserts == 0 {
			res.Quiet = append(res.Quiet, hour)
		} else {
			res.Folded = append(res.Folded, hour)
		}
		current = append(current, madeFold{hourFold{c.Hour, c.Inserts}, fold})
	}
	if len(empty) > 0 {
		if err := recordQuietHours(ctx, db, empty, &res, &current); err != nil {
			return res, err
		}
	}
	n, err := dropSuperseded(ctx, db, current, rollupFoldTables)
	if err != nil {
		return res, err
	}
	res.Superseded = n
	for _, l := range [...][]time.Time{res.Quiet, res.Unsettled} {
		slices.SortFunc(l, func(a, b time.Time) int { return a.Compare(b) })
	}
	res.Took = time.Since(start)
	return res, nil
}

// hourFold is an hour (its start, unix seconds) and an insert count it was
// folded at: a row of rollup_folds.sql.
type hourFold struct {
	Hour    int64  `ch:"hour_s"`
	Inserts uint64 `ch:"inserts"`
}

// madeFold is a fold just recorded: its hour, count and fold id.
type madeFold struct {
	hourFold
	Fold uint64
}

// hourCount is one row of rollup_hour_inserts.sql.
type hourCount struct {
	Hour    int64  `ch:"hour_s"`
	Inserts uint64 `ch:"inserts"`
	Settled uint8  `ch:"settled"`
}

func hourInserts(ctx context.Context, db DB, window []any, now time.Time, settle time.Duration) ([]hourCount, error) {
	var counts []hourCount
	args := append(window[:len(window):len(window)], clickhouse.Named("now_s", now.Unix()), clickhouse.Named("settle_s", int64(settle/time.Second)))
	if err := db.Select(ctx, &counts, rollupHourInsertsSQL, args...); err != nil {
		return nil, fmt.Errorf("count rollup inserts: %w", err)
	}
	return counts, nil
}

// countQuietHours gives the quiet hours between the first and the last
// hour of counts (the span's hours that inserts brought rows to, in order)
// an insert count of 0 (count_quiet_hours.sql) and returns them, counted
// and settled, for RollupHours to record as empty folds without reading
// them (recordQuietHours). A quiet hour is one without a count that ended
// at least settle before now and holds no rows all the same
// (quiet_hour_rows.sql: calls or violations attached without an insert,
// which are left alone). An hour without calls is otherwise never folded,
// and readers that take the folded hours up to the first one without a
// current fold (the dashboards' bound variables, the API's fold bounds)
// read every raw call after it, as if nothing were folded, on a fleet idle
// at night. The hours after the last insert wait for the next one: an idle
// install folds nothing.
func countQuietHours(ctx context.Context, db DB, counts []hourCount, now time.Time, settle time.Duration) ([]hourCount, error) {
	if len(counts) < 2 {
		return nil, nil
	}
	counted := map[int64]bool{}
	for _, c := range counts {
		counted[c.Hour] = true
	}
	var listed []int64
	for h := counts[0].Hour + 3600; h < counts[len(counts)-1].Hour && h+3600+int64(settle/time.Second) <= now.Unix(); h += 3600 {
		if !counted[h] {
			listed = append(listed, h)
		}
	}
	if len(listed) == 0 {
		return nil, nil
	}
	skip, err := hoursWithRows(ctx, db, listed)
	if err != nil {
		return nil, err
	}
	var hours []int64
	var quiet []hourCount
	for _, h := range listed {
		if !skip[h] {
			hours = append(hours, h)
			quiet = append(quiet, hourCount{Hour: h, Settled: 1})
		}
	}
	if len(hours) == 0 {
		return nil, nil
	}
	if err := db.Exec(ctx, countQuietHoursSQL, clickhouse.Named("hour_list", hours)); err != nil {
		return nil, fmt.Errorf("count quiet hours: %w", err)
	}
	return quiet, nil
}

// hoursWithRows returns those of hours (hour starts, unix seconds, in
// order) that hold calls or schema violations (quiet_hour_rows.sql): an
// hour that no insert counted, or counted at 0, can hold rows attached
// without an insert.
func hoursWithRows(ctx context.Context, db DB, hours []int64) (map[int64]bool, error) {
	set := make([]any, len(hours))
	for i, h := range hours {
		set[i] = h
	}
	var rows []struct {
		Hour int64 `ch:"hour_s"`
	}
	if err := db.Select(ctx, &rows, quietHourRowsSQL, clickhouse.Named("hours", clickhouse.GroupSet{Value: set}),
		clickhouse.Named("first_s", hours[0]), clickhouse.Named("last_s", hours[len(hours)-1])); err != nil {
		return nil, fmt.Errorf("look for rows in quiet hours: %w", err)
	}
	with := make(map[int64]bool, len(rows))
	for _, r := range rows {
		with[r.Hour] = true
	}
	return with, nil
}

// recordQuietHours records an empty fold of each hour of quiet (hours
// counted at 0, by countQuietHours or by an earlier run cut short, and
// found without rows) under one
// fold id, without reading them: one statement a fold table writes the
// marks that foldHour's statements write for an hour without calls or
// violations, and one records the folds. A fold of a quiet hour read 18.16
// for about 0.3 s, nine statements over the hour's day, for nothing. An
// hour whose count moved since it was counted (an insert came in) is left
// unsettled, its marks unrecorded, as foldHour leaves an hour whose count
// moved while it ran.
func recordQuietHours(ctx context.Context, db DB, quiet []int64, res *RollupResult, current *[]madeFold) error {
	fold := uint64(time.Now().UnixNano())
	at := []any{clickhouse.Named("hour_list", quiet), clickhouse.Named("fold", fold)}
	for _, step := range rollupFoldSteps {
		if step.quiet == "" {
			continue
		}
		if err := db.Exec(ctx, step.quiet, at...); err != nil {
			return fmt.Errorf("mark %d quiet hours as empty (%s): %w", len(quiet), step.what, err)
		}
	}
	after, err := hourInserts(ctx, db, []any{clickhouse.Named("from_s", quiet[0]), clickhouse.Named("to_s", quiet[len(quiet)-1]+3600)}, time.Unix(quiet[0], 0), 0)
	if err != nil {
		return err
	}
	again := countsByHour(after)
	var still []int64
	for _, h := range quiet {
		if c, ok := again[h]; !ok || c.Inserts != 0 {
			res.Unsettled = append(res.Unsettled, time.Unix(h, 0).UTC())
			continue
		}
		still = append(still, h)
	}
	if len(still) == 0 {
		return nil
	}
	if err := db.Exec(ctx, recordQuietRollupFoldsSQL, clickhouse.Named("hour_list", still), clickhouse.Named("fold", fold)); err != nil {
		return fmt.Errorf("record the empty folds of %d quiet hours: %w", len(still), err)
	}
	for _, h := range still {
		res.Quiet = append(res.Quiet, time.Unix(h, 0).UTC())
		*current = append(*current, madeFold{hourFold{h, 0}, fold})
	}
	return nil
}

// foldHour folds one hour counted at inserts, its calls_5m states and its
// raw calls, and records the fold, unless the hour's count moved while it
// ran; it returns the fold id and whether it recorded it. A fold cut short
// is never recorded, so readers never see its rows.
func foldHour(ctx context.Context, db DB, hour time.Time, inserts uint64) (uint64, bool, error) {
	fold := uint64(time.Now().UnixNano())
	at := []any{clickhouse.Named("hour_s", hour.Unix()), clickhouse.Named("fold", fold)}
	for _, step := range rollupFoldSteps {
		if err := db.Exec(ctx, step.fold, at...); err != nil {
			return 0, false, fmt.Errorf("%s %s: %w", step.what, hour.Format(time.RFC3339), err)
		}
	}
	after, err := hourInserts(ctx, db, []any{clickhouse.Named("from_s", hour.Unix()), clickhouse.Named("to_s", hour.Unix()+3600)}, hour, 0)
	if err != nil {
		return 0, false, err
	}
	if len(after) != 1 || after[0].Inserts != inserts {
		return 0, false, nil
	}
	if err := db.Exec(ctx, recordRollupFoldSQL, append(at, clickhouse.Named("inserts", inserts))...); err != nil {
		return 0, false, fmt.Errorf("record rollup fold of %s: %w", hour.Format(time.RFC3339), err)
	}
	return fold, true, nil
}

// foldTables are the statements that find and delete the superseded folds
// of one kind: list takes @hours and returns hour_s, inserts and fold;
// each of drop deletes @folds of @hours from one table.
type foldTables struct {
	what string
	list string
	drop []string
}

// rollupFoldTables are RollupHours' fold records and rows.
var rollupFoldTables = foldTables{
	what: "rollup folds",
	list: supersededRollupFoldsSQL,
	drop: []string{dropRollupFoldRecordsSQL, dropRollupFoldRowsSQL, dropRollupFoldSumsSQL, dropRollupFoldCopiesSQL, dropRollupFoldLatestSQL, dropRollupFoldViolationsSQL, dropRollupFoldOutcomesSQL, dropRollupFoldInvalidArgsSQL, dropRollupFoldCategoriesSQL, dropRollupFoldFlagsSQL, dropRollupFoldSessionsSQL},
}

// dropSuperseded deletes the rows and records of the folds of the hours
// just folded (current, each with the count and id of its new fold) whose
// count is another, or which are older at the same count (a fold made
// before the folds listed their hour's copies, folded again), in one
// mutation per table of tables.drop, and returns how many there were. Only those:
// a newer fold at the same count is another process's, and an unrecorded
// one may still be being written. Rows of a fold cut short before its
// record stay; readers never take them.
func dropSuperseded(ctx context.Context, db DB, current []madeFold, tables foldTables) (int, error) {
	if len(current) == 0 {
		return 0, nil
	}
	made := map[int64]madeFold{}
	hours := make([]any, len(current))
	for i, c := range current {
		made[c.Hour] = c
		hours[i] = c.Hour
	}
	at := []any{clickhouse.Named("hours", clickhouse.GroupSet{Value: hours})}
	var all []struct {
		Hour    int64  `ch:"hour_s"`
		Inserts uint64 `ch:"inserts"`
		Fold    uint64 `ch:"fold"`
	}
	if err := db.Select(ctx, &all, tables.list, at...); err != nil {
		return 0, fmt.Errorf("list superseded %s: %w", tables.what, err)
	}
	var old []any
	for _, f := range all {
		if m := made[f.Hour]; f.Inserts != m.Inserts || f.Fold < m.Fold {
			old = append(old, f.Fold)
		}
	}
	if len(old) == 0 {
		return 0, nil
	}
	at = append(at, clickhouse.Named("folds", clickhouse.GroupSet{Value: old}))
	for _, q := range tables.drop {
		if err := db.Exec(ctx, q, at...); err != nil {
			return 0, fmt.Errorf("delete superseded %s: %w", tables.what, err)
		}
	}
	return len(old), nil
}
