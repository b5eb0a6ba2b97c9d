package queries

import (
	"context"
	"sync"
	"sync/atomic"
)

// together runs every one of fns at the same time, each with a context that
// the first error cancels, waits for all of them, and returns that first
// error (nil when every one succeeded). On ClickHouse 18.16 two queries at
// once finish sooner than one after the other: each leaves a core idle in
// its single-threaded steps (BENCHMARKS.md, eleventh and fourteenth rounds).
// The DB a function uses must be safe for concurrent use, as driver.Conn is.
func together(ctx context.Context, fns ...func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	var failed atomic.Bool
	for _, fn := range fns {
		wg.Go(func() {
			if err := fn(ctx); err != nil {
				failed.Store(true)
				cancel(err) // only the first cause is kept
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		return context.Cause(ctx)
	}
	return nil
}
