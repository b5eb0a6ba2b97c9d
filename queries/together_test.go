package queries

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestTogether: every function runs, at the same time; the first error
// cancels the others and is the one returned; none gives nil.
func TestTogether(t *testing.T) {
	errFirst, errLater := errors.New("first"), errors.New("later")
	waitThen := func(err error) func(context.Context) error {
		return func(ctx context.Context) error {
			<-ctx.Done()
			if err != nil {
				return err
			}
			return ctx.Err()
		}
	}
	fail := func(ctx context.Context) error { return errFirst }
	ok := func(context.Context) error { return nil }
	for _, tc := range []struct {
		name string
		fns  []func(context.Context) error
		want error
	}{
		{"all succeed", []func(context.Context) error{ok, ok, ok}, nil},
		{"none", nil, nil},
		{"the first error cancels the waiting ones", []func(context.Context) error{waitThen(nil), fail, waitThen(errLater)}, errFirst},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := together(ctx, tc.fns...); err != tc.want {
				t.Fatalf("together: %v, want %v", err, tc.want)
			}
			if ctx.Err() != nil {
				t.Fatal("a waiting function was not cancelled: together returned at the test's timeout")
			}
		})
	}
	// At the same time: each function waits until all have started.
	var started atomic.Int32
	all := make(chan struct{})
	meet := func(context.Context) error {
		if started.Add(1) == 3 {
			close(all)
		}
		select {
		case <-all:
			return nil
		case <-time.After(time.Minute):
			return errors.New("the others never started: run one after the other")
		}
	}
	if err := together(context.Background(), meet, meet, meet); err != nil {
		t.Fatal(err)
	}
}

// spikesFakeDB answers the range query of invalidArgumentSpikes with one
// tool past the floor, fails the query holding fail, and holds every other
// query until its context is cancelled.
type spikesFakeDB struct {
	from   time.Time
	fail   string
	ranged atomic.Bool
}

var errSpikeQuery = errors.New("query failed")

func (d *spikesFakeDB) Select(ctx context.Context, dest any, query string, _ ...any) error {
	if query == invalidArgumentCountsSQL && d.ranged.CompareAndSwap(false, true) {
		*dest.(*[]spikeCell) = []spikeCell{{Tool: "t", Bucket: d.from.Unix(), Calls: 100, Invalid: 50}}
		return nil
	}
	if query == d.fail {
		return errSpikeQuery
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestInvalidArgumentSpikesReturnsTheFirstErrorOfItsThreeQueries fails each
// of the three queries that run at once while the other two wait: the
// failure must cancel them and be the error returned, with its query named.
func TestInvalidArgumentSpikesReturnsTheFirstErrorOfItsThreeQueries(t *testing.T) {
	from := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	f := Filter{From: from, To: from.Add(24 * time.Hour)}
	for _, tc := range []struct{ name, fail, want string }{
		{"range INVALID_ARGUMENT calls and top arguments", invalidArgumentTopArgsSQL, "invalid-argument spikes: range INVALID_ARGUMENT calls: query failed"},
		{"baseline", invalidArgumentBaselineRollupSQL, "invalid-argument spikes: baseline: query failed"},
		{"definition changes", toolChangesSQL, "tool definition changes: query failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := InvalidArgumentSpikes(ctx, &spikesFakeDB{from: from, fail: tc.fail}, f, SpikeOptions{})
			if !errors.Is(err, errSpikeQuery) || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if ctx.Err() != nil {
				t.Fatal("a waiting query was not cancelled: the call returned at the test's timeout")
			}
		})
	}
}
