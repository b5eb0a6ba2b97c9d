package compact

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

var (
	//go:embed chain_folds.sql
	chainFoldsSQL string
	//go:embed fold_chains_hour.sql
	foldChainsHourSQL string
	//go:embed fold_recalls_hour.sql
	foldRecallsHourSQL string
	//go:embed chain_fold_open.sql
	chainFoldOpenSQL string
	//go:embed record_chain_fold.sql
	recordChainFoldSQL string
	//go:embed record_quiet_chain_folds.sql
	recordQuietChainFoldsSQL string
	//go:embed superseded_chain_folds.sql
	supersededChainFoldsSQL string
	//go:embed drop_chain_fold_records.sql
	dropChainFoldRecordsSQL string
	//go:embed drop_chain_fold_rows.sql
	dropChainFoldRowsSQL string
	//go:embed drop_recall_fold_rows.sql
	dropRecallFoldRowsSQL string
)

// chainFoldTables are RollupChains' fold records and rows.
var chainFoldTables = foldTables{
	what: "chain folds",
	list: supersededChainFoldsSQL,
	drop: []string{dropChainFoldRecordsSQL, dropChainFoldRowsSQL, dropRecallFoldRowsSQL},
}

// ChainResult is what one RollupChains call did: as RollupResult, where
// an hour is unsettled when an insert came into it or a neighbour in the
// last settle or during the fold, Quiet are the hours without calls whose
// empty folds were recorded without a fold's read, and Superseded counts
// the earlier folds of the hours folded made at other insert counts.
type ChainResult struct {
	RollupResult
	// Open are the hours of Folded whose fold found a chain still retrying
	// where it stopped reading: their folds are recorded, so that they are
	// not made again until an insert comes, and never read.
	Open []time.Time
}

// RollupChains folds the retry chains that start in each UTC hour of the
// span before the hour before now's into one row a chain (chains_folded,
// schema/026_chains_folded.sql, with each chain's session, client, last
// call and first call), which the chain panels and endpoints add up, or
// list (retry loops), instead of grouping every call of every session and
// tool with a failure, and under
// the same fold id the hour's failures with what came after each, one row a
// failure (recalls_folded, schema/031_recalls_folded.sql), which *Retry
// habits by client* and /recalls add up; they read a subset of the chains'
// calls and are valid as long as the chains are. A chain of an hour is cut
// where a panel whose range holds the hour cuts it: its
// calls are read from 60 s before the hour (the call before a call decides
// whether it is a retry) to 600 s after it (the panels follow a chain ten
// windows past their range), so the fold of an hour depends on the calls
// of the hour before and the hour after too. An hour is folded, quiet ones
// too, when the sum of its and its neighbours' insert counts
// (calls_hour_inserts) has no fold yet, the hour after it is complete, and
// the last insert into each of the three is at least settle before now; a
// fold whose sum moved while it ran is not recorded and is made again by a
// later run. A fold that found a chain still retrying at the end of what it
// read is recorded as open and never read: a panel whose range goes on
// would follow that chain further. An hour that no insert counted and that
// holds no call (quiet_hour_rows.sql: rows attached without an insert are
// looked for) starts no chain: its empty fold is recorded with the others
// of the run in one statement, without the fold's read of the calls around
// it, which cost ClickHouse 18.16 about 45 ms an hour with nothing to read
// (a new install's first run, 360 such hours of the default -rollup-fold:
// 15-18 s of the server's CPU; BENCHMARKS.md, forty-third round). It is
// idempotent, and runs on a cluster through a *Clustered as RollupHours
// does.
func RollupChains(ctx context.Context, db DB, now time.Time, span, settle time.Duration) (ChainResult, error) {
	start := time.Now()
	var res ChainResult
	if span < time.Hour {
		return res, nil
	}
	// The last hour folded is the one before now's hour before: the hour
	// after it must be complete.
	to := now.UTC().Truncate(time.Hour).Add(-time.Hour)
	from := to.Add(-span.Truncate(time.Hour))
	counts, err := hourInserts(ctx, db, []any{clickhouse.Named("from_s", from.Add(-time.Hour).Unix()), clickhouse.Named("to_s", to.Add(time.Hour).Unix())}, now, settle)
	if err != nil {
		return res, err
	}
	byHour := countsByHour(counts)
	var made []hourFold
	if err := db.Select(ctx, &made, chainFoldsSQL, clickhouse.Named("from_s", from.Unix()), clickhouse.Named("to_s", to.Unix())); err != nil {
		return res, fmt.Errorf("list chain folds: %w", err)
	}
	folded := map[hourFold]bool{}
	for _, m := range made {
		folded[m] = true
	}
	var current []madeFold
	var quiet []hourFold // unfolded hours that no insert counted
	for hour := from; hour.Before(to); hour = hour.Add(time.Hour) {
		h := hour.Unix()
		sum, settled := neighbourhood(byHour, h)
		if folded[hourFold{h, sum}] {
			continue
		}
		if !settled {
			res.Unsettled = append(res.Unsettled, hour)
			continue
		}
		if byHour[h].Inserts == 0 {
			quiet = append(quiet, hourFold{h, sum})
			continue
		}
		if err := foldChains(ctx, db, &res, &current, hourFold{h, sum}); err != nil {
			return res, err
		}
	}
	if len(quiet) > 0 {
		held, err := quietChainHours(ctx, db, quiet, now, settle, &res, &current)
		if err != nil {
			return res, err
		}
		// The quiet hours that hold calls all the same are folded as any.
		for _, q := range held {
			if err := foldChains(ctx, db, &res, &current, q); err != nil {
				return res, err
			}
		}
	}
	for _, l := range [...][]time.Time{res.Folded, res.Quiet, res.Unsettled, res.Open} {
		slices.SortFunc(l, func(a, b time.Time) int { return a.Compare(b) })
	}
	n, err := dropSuperseded(ctx, db, current, chainFoldTables)
	if err != nil {
		return res, err
	}
	res.Superseded = n
	res.Took = time.Since(start)
	return res, nil
}

// foldChains folds the chains of one hour whose neighbourhood was counted
// at f.Inserts (foldChainHour) and notes the outcome in res and current.
func foldChains(ctx context.Context, db DB, res *ChainResult, current *[]madeFold, f hourFold) error {
	hour := time.Unix(f.Hour, 0).UTC()
	fold, open, ok, err := foldChainHour(ctx, db, hour, f.Inserts)
	if err != nil {
		return err
	}
	if !ok {
		res.Unsettled = append(res.Unsettled, hour)
		return nil
	}
	res.Folded = append(res.Folded, hour)
	if open {
		res.Open = append(res.Open, hour)
	}
	*current = append(*current, madeFold{f, fold})
	return nil
}

// quietChainHours records the empty chain folds of the hours of quiet (no
// insert counted into them; their neighbourhoods' sums as counted before)
// that hold no call, in one statement, and returns those that hold rows
// all the same (attached without an insert), for a fold that reads them.
// A quiet hour whose neighbourhood's count moved since it was read is left
// unsettled for a later run, as foldChainHour leaves a fold whose count
// moved while it ran.
func quietChainHours(ctx context.Context, db DB, quiet []hourFold, now time.Time, settle time.Duration, res *ChainResult, current *[]madeFold) ([]hourFold, error) {
	listed := make([]int64, len(quiet))
	for i, q := range quiet {
		listed[i] = q.Hour
	}
	withRows, err := hoursWithRows(ctx, db, listed)
	if err != nil {
		return nil, fmt.Errorf("chain folds: %w", err)
	}
	// The counts again, after the look for rows: an insert into the hour
	// or a neighbour since the first count may have brought calls the look
	// did not see.
	after, err := hourInserts(ctx, db, []any{clickhouse.Named("from_s", quiet[0].Hour-3600), clickhouse.Named("to_s", quiet[len(quiet)-1].Hour+7200)}, now, settle)
	if err != nil {
		return nil, err
	}
	again := countsByHour(after)
	var held []hourFold
	var hours []int64
	var inserts []uint64
	for _, q := range quiet {
		if withRows[q.Hour] {
			held = append(held, q)
			continue
		}
		if sum, _ := neighbourhood(again, q.Hour); sum != q.Inserts {
			res.Unsettled = append(res.Unsettled, time.Unix(q.Hour, 0).UTC())
			continue
		}
		hours = append(hours, q.Hour)
		inserts = append(inserts, q.Inserts)
	}
	if len(hours) == 0 {
		return held, nil
	}
	fold := uint64(time.Now().UnixNano())
	if err := db.Exec(ctx, recordQuietChainFoldsSQL, clickhouse.Named("hour_list", hours), clickhouse.Named("insert_list", inserts),
		clickhouse.Named("fold", fold)); err != nil {
		return nil, fmt.Errorf("record the empty chain folds of %d quiet hours: %w", len(hours), err)
	}
	for i, h := range hours {
		res.Quiet = append(res.Quiet, time.Unix(h, 0).UTC())
		*current = append(*current, madeFold{hourFold{h, inserts[i]}, fold})
	}
	return held, nil
}

// countsByHour indexes rows of rollup_hour_inserts.sql by their hour.
func countsByHour(counts []hourCount) map[int64]hourCount {
	byHour := make(map[int64]hourCount, len(counts))
	for _, c := range counts {
		byHour[c.Hour] = c
	}
	return byHour
}

// neighbourhood returns the sum of the insert counts of the hour starting
// at h (unix seconds) and of the hours on either side, and whether the
// last insert into each of them that has one is settled.
func neighbourhood(byHour map[int64]hourCount, h int64) (uint64, bool) {
	var sum uint64
	settled := true
	for _, k := range [...]int64{h - 3600, h, h + 3600} {
		if c, ok := byHour[k]; ok {
			sum += c.Inserts
			settled = settled && c.Settled == 1
		}
	}
	return sum, settled
}

// foldChainHour folds the chains and failures of one hour whose
// neighbourhood was counted at inserts and records the fold, unless the
// count moved while it ran; it returns the fold id, whether the fold holds
// an open chain, and whether it recorded the fold. A fold cut short is never
// recorded, so readers never see its rows.
func foldChainHour(ctx context.Context, db DB, hour time.Time, inserts uint64) (uint64, bool, bool, error) {
	fold := uint64(time.Now().UnixNano())
	at := []any{clickhouse.Named("hour_s", hour.Unix()), clickhouse.Named("fold", fold)}
	if err := db.Exec(ctx, foldChainsHourSQL, at...); err != nil {
		return 0, false, false, fmt.Errorf("fold chains of hour %s: %w", hour.Format(time.RFC3339), err)
	}
	if err := db.Exec(ctx, foldRecallsHourSQL, at...); err != nil {
		return 0, false, false, fmt.Errorf("fold failures of hour %s: %w", hour.Format(time.RFC3339), err)
	}
	after, err := hourInserts(ctx, db, []any{clickhouse.Named("from_s", hour.Unix()-3600), clickhouse.Named("to_s", hour.Unix()+7200)}, hour, 0)
	if err != nil {
		return 0, false, false, err
	}
	if sum, _ := neighbourhood(countsByHour(after), hour.Unix()); sum != inserts {
		return 0, false, false, nil
	}
	var open []struct {
		Open uint8 `ch:"any_open"`
	}
	if err := db.Select(ctx, &open, chainFoldOpenSQL, at...); err != nil {
		return 0, false, false, fmt.Errorf("look for open chains of hour %s: %w", hour.Format(time.RFC3339), err)
	}
	isOpen := len(open) == 1 && open[0].Open == 1
	var o uint8
	if isOpen {
		o = 1
	}
	if err := db.Exec(ctx, recordChainFoldSQL, append(at, clickhouse.Named("inserts", inserts), clickhouse.Named("open", o))...); err != nil {
		return 0, false, false, fmt.Errorf("record chain fold of %s: %w", hour.Format(time.RFC3339), err)
	}
	return fold, isOpen, true, nil
}
