package queries_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/queries"
)

const (
	rl  = classify.RateLimited
	ua  = classify.Unavailable
	ut  = classify.UpstreamTimeout
	nf  = classify.NotFound
	ia  = classify.InvalidArgument
	itl = classify.Internal
)

// retryCall is a fixture call for the retry-chain analytics.
type retryCall struct {
	call
	continuation bool
	misflagged   bool
}

func (r retryCall) row() pipeline.Call {
	c := r.call
	if c.tool == "" {
		c.tool = "search"
	}
	row := c.row()
	if r.continuation {
		row.Continuation = 1
	}
	if r.misflagged {
		row.Misflagged = 1
	}
	return row
}

// retryFixture returns the hand-made fixture of docs/analytics.md and the
// duplicate of one of its calls, replayed later. The expected answers of the
// tests below were written by hand from the definitions, before running the
// queries. Range [t0, t0+1h), window 60 s. Unless noted, declared
// retryability is -1 (unknown).
func retryFixture() (calls []pipeline.Call, replay []pipeline.Call) {
	u := int8(-1)
	fx := []retryCall{
		// s1/search: gap exactly at the window is a retry, window + 1 ms is not.
		// Chain RATE_LIMITED (declared 1): 2 calls, retry_then_fail, same args.
		{call: call{at: 0, session: "s1", req: "1", category: rl, args: "a", declared: 1}},
		{call: call{at: 60 * time.Second, session: "s1", req: "2", category: rl, args: "a", declared: 1}},
		{call: call{at: 120*time.Second + time.Millisecond, session: "s1", req: "3", args: "a", declared: u}},
		// s1: an interleaved call of another tool does not break the chain.
		// Chain INVALID_ARGUMENT: retry_then_success with changed arguments.
		{call: call{at: 5 * time.Minute, session: "s1", req: "4", category: ia, args: "b", declared: u}},
		{call: call{at: 5*time.Minute + 10*time.Second, session: "s1", tool: "fetch", req: "5", declared: u}, misflagged: true},
		{call: call{at: 5*time.Minute + 20*time.Second, session: "s1", req: "6", args: "c", declared: u}},
		// s2: two failures within one second; ts_ms orders them (UNAVAILABLE
		// at .200 first, inserted second). Chain UNAVAILABLE: 3 calls, success.
		{call: call{at: 10*time.Minute + 800*time.Millisecond, session: "s2", req: "8", category: ut, args: "d", declared: u}},
		{call: call{at: 10*time.Minute + 200*time.Millisecond, session: "s2", req: "7", category: ua, args: "d", declared: u}},
		{call: call{at: 10*time.Minute + 30*time.Second, session: "s2", req: "9", args: "d", declared: u}},
		// s3: equal ts_ms, ordered by request id: "a" (failed) before "b" (ok).
		// Chain NOT_FOUND (declared 0): retry_then_success, same args.
		{call: call{at: 15 * time.Minute, session: "s3", req: "b", args: "e", declared: 0}},
		{call: call{at: 15 * time.Minute, session: "s3", req: "a", category: nf, args: "e", declared: 0}},
		// s4: one INTERNAL failure, replayed later (see replay): no_retry.
		{call: call{at: 20 * time.Minute, session: "s4", req: "1", category: itl, args: "f", declared: u}},
		// No session id: every call is its own session key. Two no_retry chains.
		{call: call{at: 25 * time.Minute, session: "call:00000000000000a1", req: "1", category: rl, declared: u}, misflagged: true},
		{call: call{at: 25*time.Minute + 10*time.Second, session: "call:00000000000000a2", req: "1", category: rl, declared: u}},
		// s5: continuations neither extend nor end a chain. Chain UNAVAILABLE:
		// 15 -> 17 (60 s) -> 19 (60 s), retry_then_success, 3 calls.
		{call: call{at: 30 * time.Minute, session: "s5", req: "15", category: ua, args: "g", declared: u}},
		{call: call{at: 30*time.Minute + 30*time.Second, session: "s5", req: "16", args: "g", declared: u}, continuation: true},
		{call: call{at: 31 * time.Minute, session: "s5", req: "17", category: ua, args: "g", declared: u}},
		{call: call{at: 31*time.Minute + 50*time.Second, session: "s5", req: "18", category: ua, args: "h", declared: u}, continuation: true},
		{call: call{at: 32 * time.Minute, session: "s5", req: "19", args: "g", declared: u}},
		// s6: a chain started in range and retried after its end: 3 calls, success.
		{call: call{at: 59*time.Minute + 30*time.Second, session: "s6", req: "1", category: rl, declared: 1}},
		{call: call{at: 60*time.Minute + 20*time.Second, session: "s6", req: "2", category: rl, declared: 1}},
		{call: call{at: 61*time.Minute + 10*time.Second, session: "s6", req: "3", declared: 1}},
		// s7: a chain started after the range: not counted.
		{call: call{at: 60*time.Minute + 10*time.Second, session: "s7", req: "1", category: rl, declared: 1}},
		// s8: 25 retries 24, which started before the range: no chain starts at
		// 25. 26 comes 100 s later: a chain of its own, no_retry.
		{call: call{at: -30 * time.Second, session: "s8", req: "24", category: rl, declared: 1}},
		{call: call{at: 20 * time.Second, session: "s8", req: "25", category: rl, declared: 1}},
		{call: call{at: 2 * time.Minute, session: "s8", req: "26", category: rl, declared: 1}},
		// s9/poll: failures every 60 s from 10:59 to 11:09, then a success at
		// 11:10:00, the horizon (to + 10 windows, exclusive): the chain is
		// followed for 11 calls and ends retry_then_fail.
	}
	for i := range 12 {
		c := retryCall{call: call{at: time.Duration(59+i) * time.Minute, session: "s9", tool: "poll", req: fmt.Sprint(i), category: rl, declared: 1}}
		if i == 11 {
			c.category = ""
		}
		fx = append(fx, c)
	}
	// Another tenant: filtered out.
	fx = append(fx, retryCall{call: call{at: time.Minute, tenant: "globex", session: "g1", req: "1", category: rl}})
	for _, c := range fx {
		calls = append(calls, c.row())
	}
	dup := calls[11] // s4's INTERNAL failure, ingested again
	dup.IngestedMs = 2
	return calls, []pipeline.Call{dup}
}

func insertRetryFixture(t *testing.T, e *chtest.Engine) {
	t.Helper()
	calls, replay := retryFixture()
	e.Insert(t, calls)
	e.Insert(t, replay)
}

var retryRange = queries.Filter{From: t0, To: t0.Add(time.Hour), Tenant: "acme"}

func TestRetryOutcomes(t *testing.T) {
	ctx := context.Background()
	want := []queries.RetryOutcome{
		{Tool: "poll", Category: "RATE_LIMITED", DeclaredRetryable: 1, ExpectedRetryable: 1, Chains: 1, RetryThenFail: 1, AvgAttempts: 11, Attempts: 11},
		{Tool: "search", Category: "INTERNAL", DeclaredRetryable: -1, ExpectedRetryable: 1, Chains: 1, NoRetry: 1, AvgAttempts: 1, Attempts: 1},
		{Tool: "search", Category: "INVALID_ARGUMENT", DeclaredRetryable: -1, ExpectedRetryable: 0, Chains: 1, RetryThenSuccess: 1, SuccessShare: 1, AvgAttempts: 2, ArgsChangedChains: 1, Attempts: 2},
		{Tool: "search", Category: "NOT_FOUND", DeclaredRetryable: 0, ExpectedRetryable: 0, Chains: 1, RetryThenSuccess: 1, SuccessShare: 1, AvgAttempts: 2, Attempts: 2},
		{Tool: "search", Category: "RATE_LIMITED", DeclaredRetryable: -1, ExpectedRetryable: 1, Chains: 2, NoRetry: 2, AvgAttempts: 1, Attempts: 2},
		{Tool: "search", Category: "RATE_LIMITED", DeclaredRetryable: 1, ExpectedRetryable: 1, Chains: 3, RetryThenSuccess: 1, RetryThenFail: 1, NoRetry: 1, SuccessShare: 0.5, AvgAttempts: 2, Attempts: 6},
		{Tool: "search", Category: "UNAVAILABLE", DeclaredRetryable: -1, ExpectedRetryable: 1, Chains: 2, RetryThenSuccess: 2, SuccessShare: 1, AvgAttempts: 3, Attempts: 6},
	}
	// With a 50 s window the 60 s gaps are no retries: s1's first chain,
	// s5's and s9's fall apart into single failures, and s6 (50 s gaps)
	// still recovers. The horizon is then to + 500 s.
	want50 := []queries.RetryOutcome{
		{Tool: "poll", Category: "RATE_LIMITED", DeclaredRetryable: 1, ExpectedRetryable: 1, Chains: 1, NoRetry: 1, AvgAttempts: 1, Attempts: 1},
		{Tool: "search", Category: "INTERNAL", DeclaredRetryable: -1, ExpectedRetryable: 1, Chains: 1, NoRetry: 1, AvgAttempts: 1, Attempts: 1},
		{Tool: "search", Category: "INVALID_ARGUMENT", DeclaredRetryable: -1, ExpectedRetryable: 0, Chains: 1, RetryThenSuccess: 1, SuccessShare: 1, AvgAttempts: 2, ArgsChangedChains: 1, Attempts: 2},
		{Tool: "search", Category: "NOT_FOUND", DeclaredRetryable: 0, ExpectedRetryable: 0, Chains: 1, RetryThenSuccess: 1, SuccessShare: 1, AvgAttempts: 2, Attempts: 2},
		{Tool: "search", Category: "RATE_LIMITED", DeclaredRetryable: -1, ExpectedRetryable: 1, Chains: 2, NoRetry: 2, AvgAttempts: 1, Attempts: 2},
		// s1: 2 single failures; s6: success after 3 calls (50 s gaps); s8:
		// 25 still retries 24 (50 s, read through the lookback), 26 alone.
		{Tool: "search", Category: "RATE_LIMITED", DeclaredRetryable: 1, ExpectedRetryable: 1, Chains: 4, RetryThenSuccess: 1, NoRetry: 3, SuccessShare: 1, AvgAttempts: 1.5, Attempts: 6},
		// s2 recovers after 3 calls (30 s gap); s5: 15 and 17 single failures.
		{Tool: "search", Category: "UNAVAILABLE", DeclaredRetryable: -1, ExpectedRetryable: 1, Chains: 3, RetryThenSuccess: 1, NoRetry: 2, SuccessShare: 1, AvgAttempts: 5.0 / 3, Attempts: 5},
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			insertRetryFixture(t, e)
			got, err := queries.RetryOutcomes(ctx, e.DB, retryRange, queries.DefaultRetryWindow)
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, got, want)
			got, err = queries.RetryOutcomes(ctx, e.DB, retryRange, 50*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, got, want50)
			f := retryRange
			f.Tool = "poll"
			got, err = queries.RetryOutcomes(ctx, e.DB, f, queries.DefaultRetryWindow)
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, got, want[:1])
			calls, replay := retryFixture()
			if got, want := refRetryOutcomes(append(calls, replay...), retryRange, queries.DefaultRetryWindow), want; !equalRows(got, want) {
				t.Errorf("reference implementation disagrees with the hand-made answer\n got %s\nwant %s", dump(got), dump(want))
			}
		})
	}
}

func TestRecalls(t *testing.T) {
	ctx := context.Background()
	want := []queries.Recall{
		// 10:59 -> 11:00, read past the end of the range.
		{Tool: "poll", Category: "RATE_LIMITED", Failures: 1, WithNextCall: 1, Unchanged: 1, Rate: 1},
		// s4's replayed copy is not a next call.
		{Tool: "search", Category: "INTERNAL", Failures: 1},
		// s1 req 4 -> 6: changed arguments.
		{Tool: "search", Category: "INVALID_ARGUMENT", Failures: 1, WithNextCall: 1},
		// s3: "a" -> "b" at the same millisecond.
		{Tool: "search", Category: "NOT_FOUND", Failures: 1, WithNextCall: 1, Unchanged: 1, Rate: 1},
		// s1 req 1 (next exactly at the window), s6 req 1 (next after the
		// range) are unchanged re-calls; s1 req 2 (window + 1 ms), the two
		// sessionless calls, s8's 25 and 26 have no next call.
		{Tool: "search", Category: "RATE_LIMITED", Failures: 7, WithNextCall: 2, Unchanged: 2, Rate: 2.0 / 7},
		// s2 .200, s5 15 and 17 (the continuations in between are skipped).
		{Tool: "search", Category: "UNAVAILABLE", Failures: 3, WithNextCall: 3, Unchanged: 3, Rate: 1},
		// s2 .800 -> 10:10:30.
		{Tool: "search", Category: "UPSTREAM_TIMEOUT", Failures: 1, WithNextCall: 1, Unchanged: 1, Rate: 1},
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			insertRetryFixture(t, e)
			got, err := queries.Recalls(ctx, e.DB, retryRange, queries.DefaultRetryWindow)
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, got, want)
			calls, replay := retryFixture()
			if got := refRecalls(append(calls, replay...), retryRange, queries.DefaultRetryWindow); !equalRows(got, want) {
				t.Errorf("reference implementation disagrees with the hand-made answer\n got %s\nwant %s", dump(got), dump(want))
			}
		})
	}
}

func TestMisclassifications(t *testing.T) {
	ctx := context.Background()
	want := []queries.Misclassification{
		// fetch req 5 (OK) and the first sessionless call (RATE_LIMITED, one
		// of 7 RATE_LIMITED search calls in range).
		{Kind: "misflagged", Tool: "fetch", Category: "OK", Calls: 1, Total: 1,
			Evidence: "1 of 1 calls have an isError flag that contradicts the category (100%)"},
		{Kind: "misflagged", Tool: "search", Category: "RATE_LIMITED", Calls: 1, Total: 7,
			Evidence: "1 of 7 calls have an isError flag that contradicts the category (14%)"},
		// s3: NOT_FOUND, declared and expected not retryable, recovered with
		// the same arguments.
		{Kind: "non_retryable_recovers", Tool: "search", Category: "NOT_FOUND", Chains: 1, Calls: 2, Recovered: 1, Total: 1,
			Evidence: "1 of 1 same-argument retried chains recovered (100%)"},
		{Kind: "retried_non_retryable", Tool: "search", Category: "NOT_FOUND", Chains: 1, Calls: 2, Recovered: 1, Total: 1,
			Evidence: "1 chain retried with unchanged arguments (1 retry), 1 recovered"},
		// s9: 11 calls, never recovered. search RATE_LIMITED: 1 of 2 retried
		// chains recovered; search UNAVAILABLE 2 of 2.
		{Kind: "retryable_never_recovers", Tool: "poll", Category: "RATE_LIMITED", Chains: 1, Calls: 11, Total: 1,
			Evidence: "0 of 1 retried chains recovered (0%)"},
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			insertRetryFixture(t, e)
			got, err := queries.Misclassifications(ctx, e.DB, retryRange, queries.DefaultRetryWindow, 1)
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, got, want)
			got, err = queries.Misclassifications(ctx, e.DB, retryRange, queries.DefaultRetryWindow, 2)
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, got, nil)
			calls, replay := retryFixture()
			if got := refMisclassifications(append(calls, replay...), retryRange, queries.DefaultRetryWindow, 1, nil); !equalRows(got, want) {
				t.Errorf("reference implementation disagrees with the hand-made answer\n got %s\nwant %s", dump(got), dump(want))
			}
		})
	}
}

// equalRows reports whether two row slices are equal, nil and empty alike.
func equalRows[T any](got, want []T) bool {
	return len(got) == 0 && len(want) == 0 || reflect.DeepEqual(got, want)
}

// TestMisclassificationThresholds pins the edges of the shares: exactly
// 10 % recovered is not "below 10 %", exactly 50 % is "at least 50 %".
func TestMisclassificationThresholds(t *testing.T) {
	ctx := context.Background()
	var fx []pipeline.Call
	n := 0
	chains := func(tool string, cat classify.Category, declared int8, total, recovered int) {
		for i := range total {
			n++
			s := fmt.Sprintf("t%d", n)
			start := time.Duration(n) * time.Second
			fx = append(fx, call{at: start, session: s, tool: tool, req: "1", category: cat, declared: declared, args: "x"}.row())
			var then classify.Category = cat
			if i < recovered {
				then = classify.OK
			}
			fx = append(fx, call{at: start + 10*time.Second, session: s, tool: tool, req: "2", category: then, declared: declared, args: "x"}.row())
		}
	}
	chains("a", rl, 1, 10, 1) // 10 %: not flagged
	chains("b", rl, 1, 11, 1) // 9 %: flagged
	chains("a", nf, 0, 4, 2)  // 50 %: flagged, and 4 wasted chains
	chains("b", nf, -1, 5, 2) // 40 %: not flagged (expected 0), 5 wasted chains
	want := []queries.Misclassification{
		{Kind: "non_retryable_recovers", Tool: "a", Category: "NOT_FOUND", Chains: 4, Calls: 8, Recovered: 2, Total: 4,
			Evidence: "2 of 4 same-argument retried chains recovered (50%)"},
		{Kind: "retried_non_retryable", Tool: "a", Category: "NOT_FOUND", Chains: 4, Calls: 8, Recovered: 2, Total: 4,
			Evidence: "4 chains retried with unchanged arguments (4 retries), 2 recovered"},
		{Kind: "retried_non_retryable", Tool: "b", Category: "NOT_FOUND", Chains: 5, Calls: 10, Recovered: 2, Total: 5,
			Evidence: "5 chains retried with unchanged arguments (5 retries), 2 recovered"},
		{Kind: "retryable_never_recovers", Tool: "b", Category: "RATE_LIMITED", Chains: 11, Calls: 22, Recovered: 1, Total: 11,
			Evidence: "1 of 11 retried chains recovered (9%)"},
	}
	f := queries.Filter{From: t0, To: t0.Add(time.Hour)}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, fx)
			got, err := queries.Misclassifications(ctx, e.DB, f, queries.DefaultRetryWindow, 4)
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, got, want)
			if got := refMisclassifications(fx, f, queries.DefaultRetryWindow, 4, nil); !equalRows(got, want) {
				t.Errorf("reference implementation disagrees with the hand-made answer\n got %s\nwant %s", dump(got), dump(want))
			}
		})
	}
}

// halfFailingDB fails the query whose text holds fail at once, answers the
// lists of folded hours with none, and holds every other query until its
// context is cancelled.
type halfFailingDB struct{ fail string }

var errHalf = errors.New("half failed")

func (d halfFailingDB) Select(ctx context.Context, _ any, query string, _ ...any) error {
	if strings.Contains(query, d.fail) {
		return errHalf
	}
	if queries.ReadsNoTenantData(query) {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestMisclassificationsReturnsTheFirstErrorOfItsTwoQueries runs each of the
// two queries failing while the other waits: the failure must cancel the
// waiting one and be the error returned, with the query named.
func TestMisclassificationsReturnsTheFirstErrorOfItsTwoQueries(t *testing.T) {
	for _, tc := range []struct{ name, fail, want string }{
		{"chains", "retryable_never_recovers", "misclassifications: half failed"},
		{"misflagged", "'misflagged' AS kind", "misclassifications: misflagged: half failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := queries.Misclassifications(ctx, halfFailingDB{tc.fail}, retryRange, queries.DefaultRetryWindow, 1)
			if !errors.Is(err, errHalf) || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if ctx.Err() != nil {
				t.Fatal("the waiting query was not cancelled: the call returned at the test's timeout")
			}
		})
	}
}
