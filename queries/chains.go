package queries

import (
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

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
	w := window.Milliseconds()
	if w <= 0 {
		return nil, fmt.Errorf("retry window %s: want at least 1ms", window)
	}
	if !f.From.Before(f.To) {
		return nil, fmt.Errorf("range [%s, %s) is empty", f.From, f.To)
	}
	lo := f.From.UnixMilli() - back*w
	hi := f.To.UnixMilli() + ahead*w
	return append(f.args(),
		clickhouse.Named("window_ms", w),
		clickhouse.Named("lo_ms", lo),
		clickhouse.Named("hi_ms", hi),
		clickhouse.Named("lo_s", floorDiv(lo, 1000)),
		clickhouse.Named("hi_s", floorDiv(hi-1, 1000)),
	), nil
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
