package queries

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

var chainFoldHoursSQL = mustSQL("chain_fold_hours.sql")

// foldBranch starts the comment over the branch of retry_outcomes.sql,
// misclassifications.sql, retry_loops.sql and recalls.sql that reads the
// chain fold; the branch ends with the UNION ALL after it.
const foldBranch = "-- Fold branch:"

// withoutFold returns query, the statement of file, without its fold
// branch, for a range with no folded hour: the branch would read nothing,
// but its set of the current folds (chain_current_folds) is built all the
// same, which cost /recalls 20-36 ms and the gauges' every refresh
// (BENCHMARKS.md, fifty-second and fifty-third rounds). It panics at
// start-up unless query has the branch once.
func withoutFold(file, query string) string {
	return withoutFolds(file, query, 1)
}

// withoutFolds returns query without its n fold branches, each from the
// start of its marker's line to the UNION ALL after it; it panics unless
// query has n.
func withoutFolds(file, query string, n int) string {
	if c := strings.Count(query, foldBranch); c != n {
		panic(fmt.Sprintf("queries: %s has %d branches from %q to UNION ALL, want %d", file, c, foldBranch, n))
	}
	for range n {
		i := strings.Index(query, foldBranch)
		j := strings.Index(query[i:], "UNION ALL\n")
		if j < 0 {
			panic(fmt.Sprintf("queries: %s has no UNION ALL after %q", file, foldBranch))
		}
		end := i + j + len("UNION ALL\n")
		// From the start of the marker's line.
		i = strings.LastIndex(query[:i], "\n") + 1
		query = query[:i] + query[end:]
	}
	return query
}

// foldForms are the two forms of a chain statement that reads the chain
// fold: as written (folded), and without the fold's branch (withoutFold),
// for a range with no folded hour.
type foldForms struct{ folded, raw string }

// newFoldForms makes the forms of file's statement query; it panics at
// start-up unless query has the fold's branch once.
func newFoldForms(file, query string) foldForms {
	return foldForms{folded: query, raw: withoutFold(file, query)}
}

// statement is the form for a range with some hour folded (foldedChainArgs'
// folded) or none.
func (f foldForms) statement(folded bool) string {
	if folded {
		return f.folded
	}
	return f.raw
}

// clientForms are the four forms of a chain statement that answers per
// client on request (recalls.sql, retry_outcomes.sql): the foldForms of the
// statement as written, which reads the client (byClient), and of the same
// without the client (withoutClient).
type clientForms struct{ byClient, plain foldForms }

// newClientForms makes the forms of file's statement; it panics at start-up
// unless the statement has the fold's branch and each of clientColumns once.
func newClientForms(file string) clientForms {
	q := mustSQL(file)
	return clientForms{byClient: newFoldForms(file, q), plain: newFoldForms(file, withoutClient(file, q))}
}

// statement is the form for a range with some hour folded or none, and
// rows by client or not.
func (c clientForms) statement(folded, byClient bool) string {
	if byClient {
		return c.byClient.statement(folded)
	}
	return c.plain.statement(folded)
}

// clientColumns are the columns of a clientForms statement that read the
// client (a raw group's and a folded row's), each on a line of its own;
// clientKey is the branch of its tool_ key that names the client, which
// follows "multiIf(" and precedes the by_pair branch.
var (
	clientColumns = []*regexp.Regexp{
		regexp.MustCompile(`\n[ \t]*min\(toString\(client\)\) AS client_,[ \t]*`),
		regexp.MustCompile(`\n[ \t]*CAST\(client AS String\) AS client_,[ \t]*`),
	}
	clientKey = regexp.MustCompile(`multiIf\(@by_client = 1, concat\(toString\(length\(client_\)\), ':', client_, toString\(tool\)\),\s*@by_pair = 1,`)
)

// withoutClient returns query, the statement of file, without the client:
// each of clientColumns' lines dropped, and each tool_ key's client branch,
// so that the key is if(@by_pair = 1, <the pair's key>, <the tool>), as
// before the statement could answer per client. ClickHouse 18.16 reads a
// column a query names even where a constant condition leaves it unused
// (reading the client cost /recalls 1.03-1.07x its time there), and the
// client's column and branch left in as constants cost /retry-outcomes'
// raw branch 4-7 ms on 18.16 (BENCHMARKS.md, fifty-first and fifty-fourth
// rounds). It panics at start-up unless query has each column once and a
// client branch for each.
func withoutClient(file, query string) string {
	for _, c := range clientColumns {
		if n := len(c.FindAllStringIndex(query, -1)); n != 1 {
			panic(fmt.Sprintf("queries: %s has %d lines matching %q, want 1", file, n, c))
		}
		query = c.ReplaceAllString(query, "")
	}
	if n := len(clientKey.FindAllStringIndex(query, -1)); n != len(clientColumns) {
		panic(fmt.Sprintf("queries: %s has %d client branches in its keys, want %d", file, n, len(clientColumns)))
	}
	return clientKey.ReplaceAllString(query, "if(@by_pair = 1,")
}

// DefaultRetryWindow is the largest gap between a call and the next call of
// the same tool in the same session key for the second to be a retry of the
// first (inclusive), unless a request asks for another (docs/analytics.md).
const DefaultRetryWindow = 60 * time.Second

// ChainHorizon is how far past the end of the range, in retry windows, a
// chain started in the range is followed. Calls at or after
// to + ChainHorizon*window are not read: a chain still retrying there ends
// with the last call read.
const ChainHorizon = 10

// chainArgs binds the parameters of the chain queries: the Filter's, the
// window in milliseconds, and the span of calls to read, [lo, hi), in
// milliseconds (lo_ms, hi_ms) and in the seconds of the ts column (lo_s,
// hi_s, both inclusive) so that the daily partitions prune. lo is back
// windows before From, hi is ahead windows after To.
func chainArgs(f Filter, window time.Duration, back, ahead int64) ([]any, error) {
	w, err := chainWindow(f, window)
	if err != nil {
		return nil, err
	}
	return spanArgs(f, w, f.From.UnixMilli()-back*w, f.To.UnixMilli()+ahead*w), nil
}

// chainWindow checks a chain query's window and range and returns the
// window in milliseconds.
func chainWindow(f Filter, window time.Duration) (int64, error) {
	w := window.Milliseconds()
	if w <= 0 {
		return 0, fmt.Errorf("retry window %s: want at least 1ms", window)
	}
	if !f.From.Before(f.To) {
		return 0, fmt.Errorf("range [%s, %s) is empty", f.From, f.To)
	}
	return w, nil
}

// spanArgs binds the Filter's parameters, the window w and the span of
// calls [lo, hi) in milliseconds, as chainArgs describes.
func spanArgs(f Filter, w, lo, hi int64) []any {
	return append(f.args(),
		clickhouse.Named("window_ms", w),
		clickhouse.Named("lo_ms", lo),
		clickhouse.Named("hi_ms", hi),
		clickhouse.Named("lo_s", floorDiv(lo, 1000)),
		clickhouse.Named("hi_s", floorDiv(hi-1, 1000)),
	)
}

// FoldedChainWindow is the retry window of the chains compact.RollupChains
// folds each hour (compact/fold_chains_hour.sql), followed ChainHorizon
// windows past the hour: only chain queries with this window read them.
const FoldedChainWindow = DefaultRetryWindow

// foldedChainArgs binds the parameters of the queries that read the chain
// folds (retry_outcomes.sql and misclassifications.sql their chains,
// recalls.sql their failures): chainArgs' with back and ahead, the raw span
// starting back windows before the bound, and the bound itself.
// The bound (bound_s) is where the chains stop coming from the fold
// (chain_fold_hours.sql): the start of the first hour from the range's first
// (from_hour_s) without a current chain fold, or of the hour the range ends
// in; with a window other than FoldedChainWindow, or a range that starts
// in the last two hours, it is the range's first hour, and every chain
// comes from the raw calls. raw_from_ms is the earliest start of a chain
// (or time of a failure) taken from the raw calls, the later of From and the
// bound. When the bound
// is past the range no chain starts from it, and the raw span is empty.
// folded reports whether the bound lies past the range's first hour: some
// hour is read from the fold.
func foldedChainArgs(ctx context.Context, db DB, f Filter, window time.Duration, back, ahead int64) (args []any, folded bool, err error) {
	w, err := chainWindow(f, window)
	if err != nil {
		return nil, false, err
	}
	fromHour := floorDiv(f.From.UnixMilli(), 3_600_000) * 3600
	toHour := floorDiv(f.To.UnixMilli(), 3_600_000) * 3600
	bound := fromHour
	// The job folds an hour once the hour after it is complete, so a range
	// that starts in the last two hours (the gauges' trailing hour) has no
	// fold to start from: the raw calls answer it, without asking. A clock
	// behind the job's only sends a range to the raw calls too.
	if window == FoldedChainWindow && toHour > fromHour && fromHour+7200 <= time.Now().Unix() {
		if bound, err = foldedUntil(ctx, db, chainFoldHoursSQL, fromHour, toHour); err != nil {
			return nil, false, fmt.Errorf("chain bound: %w", err)
		}
	}
	to := f.To.UnixMilli()
	rawFrom := max(f.From.UnixMilli(), bound*1000)
	lo, hi := rawFrom-back*w, to+ahead*w
	if rawFrom >= to {
		lo = hi
	}
	return append(spanArgs(f, w, lo, hi),
		clickhouse.Named("from_hour_s", fromHour),
		clickhouse.Named("bound_s", bound),
		clickhouse.Named("raw_from_ms", rawFrom),
	), bound > fromHour, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// percent is 100*n/d rounded down, so that a share below a threshold never
// prints as the threshold.
func percent(n, d uint64) uint64 {
	if d == 0 {
		return 0
	}
	return 100 * n / d
}
