package queries

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// overviewForms are overview.sql as written (folded: the whole hours with
// a current fold of their calls per category and failure and of their
// session keys from the folds, the others from the raw calls) and without
// the folds (raw: every call of the range from the raw calls;
// newOverviewForms).
var overviewForms = newOverviewForms("overview.sql")

var overviewFoldHoursSQL = mustSQL("overview_fold_hours.sql")

// overviewFoldLines are the lines of overview.sql's folded form that only
// set the hours it reads from the folds aside in its raw branches: the
// subqueries of those hours (sessions_folded's current marks, to the line
// that ends with their current folds' set), their comment, and the bounds
// between which the raw calls are not read.
var overviewFoldLines = []struct {
	re *regexp.Regexp
	n  int
}{
	{regexp.MustCompile(`(?m)^[ \t]*(?:PREWHERE|AND) (?:toStartOfHour\(ts\)|hour) GLOBAL NOT IN \(\n[ \t]*SELECT hour\n[ \t]*FROM sessions_folded\n(?:.*\n)*?.*calls_5m_current_folds\)\)\n`), 3},
	{regexp.MustCompile(`(?m)^[ \t]*-- not those of the hours counted from the folds\n`), 1},
	{regexp.MustCompile(`(?m)^[ \t]*AND \(ts < toDateTime\(@first_s, 'UTC'\) OR ts >= toDateTime\(@flags_bound_s, 'UTC'\)\)\n`), 4},
}

// sqlComment is a comment line.
var sqlComment = regexp.MustCompile(`(?m)^[ \t]*--.*$`)

// newOverviewForms makes the forms of file's statement; it panics at
// start-up unless the statement has two fold branches (the counts' and the
// session keys') and each of overviewFoldLines as often as listed, and
// nothing else of the folds.
func newOverviewForms(file string) foldForms {
	q := mustSQL(file)
	raw := withoutFolds(file, q, 2)
	for _, l := range overviewFoldLines {
		if n := len(l.re.FindAllStringIndex(raw, -1)); n != l.n {
			panic(fmt.Sprintf("queries: %s has %d blocks matching %q, want %d", file, n, l.re, l.n))
		}
		raw = l.re.ReplaceAllString(raw, "")
	}
	code := sqlComment.ReplaceAllString(raw, "")
	for _, fold := range []string{"calls_flags_folded", "sessions_folded", "@flags_bound_s"} {
		if strings.Contains(code, fold) {
			panic(fmt.Sprintf("queries: %s reads %s outside its fold branches and the lines that set their hours aside", file, fold))
		}
	}
	return foldForms{folded: q, raw: raw}
}

// Totals are the header numbers of a range.
type Totals struct {
	Calls       uint64  `json:"calls"`
	Failures    uint64  `json:"failures"`
	NonFailed   uint64  `json:"non_failed"`
	Empty       uint64  `json:"empty"`
	Misflagged  uint64  `json:"misflagged"`
	Tools       uint64  `json:"tools"`
	Sessions    uint64  `json:"sessions"`
	FailureRate float64 `json:"failure_rate"` // failures / calls
	EmptyRate   float64 `json:"empty_rate"`   // empty / non-failed calls
}

// ToolFailures is one of the most failing tools.
type ToolFailures struct {
	Tool     string  `json:"tool"`
	Calls    uint64  `json:"calls"`
	Failures uint64  `json:"failures"`
	Rate     float64 `json:"rate"`
}

// overviewRow is one row of overview.sql: a tool's counts (part 0) or the
// range's distinct session keys (part 1).
type overviewRow struct {
	Part       uint8  `ch:"part"`
	Tool       string `ch:"tool_name"`
	Calls      uint64 `ch:"calls_n"`
	Failures   uint64 `ch:"failures_n"`
	Empty      uint64 `ch:"empty_n"`
	Misflagged uint64 `ch:"misflagged_n"`
	Sessions   uint64 `ch:"sessions_n"`
}

// Overview returns the range's totals and at most limit (at least 1) of
// the tools with failures, most failures first, ties by name, from one
// query (after the lookup of its folded hours over more than two UTC days,
// overview_fold_hours.sql, as Misclassifications' misflagged rows look up
// theirs: boundArgs). A call ingested more than once counts once, as its
// latest ingest.
func Overview(ctx context.Context, db DB, f Filter, limit int) (Totals, []ToolFailures, error) {
	args, skipsDay, err := boundArgs(ctx, db, f, overviewFoldHoursSQL)
	if err != nil {
		return Totals{}, nil, fmt.Errorf("overview: %w", err)
	}
	var rows []overviewRow
	if err := db.Select(ctx, &rows, overviewForms.statement(skipsDay), args...); err != nil {
		return Totals{}, nil, fmt.Errorf("overview: %w", err)
	}
	var t Totals
	sessionRows := 0
	top := []ToolFailures{}
	for _, r := range rows {
		switch r.Part {
		case 0:
			if r.Calls == 0 {
				continue
			}
			t.Calls += r.Calls
			t.Failures += r.Failures
			t.Empty += r.Empty
			t.Misflagged += r.Misflagged
			t.Tools++
			if r.Failures > 0 {
				top = append(top, ToolFailures{Tool: r.Tool, Calls: r.Calls, Failures: r.Failures,
					Rate: ratio(float64(r.Failures), float64(r.Calls))})
			}
		case 1:
			t.Sessions = r.Sessions
			sessionRows++
		default:
			return Totals{}, nil, fmt.Errorf("overview: unknown part %d", r.Part)
		}
	}
	if sessionRows != 1 {
		return Totals{}, nil, fmt.Errorf("overview: %d session rows, want 1", sessionRows)
	}
	t.NonFailed = t.Calls - t.Failures
	t.FailureRate = ratio(float64(t.Failures), float64(t.Calls))
	t.EmptyRate = ratio(float64(t.Empty), float64(t.NonFailed))
	slices.SortFunc(top, func(a, b ToolFailures) int {
		return cmp.Or(cmp.Compare(b.Failures, a.Failures), cmp.Compare(a.Tool, b.Tool))
	})
	return t, top[:min(len(top), max(limit, 1))], nil
}
