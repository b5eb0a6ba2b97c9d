package queries_test

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/queries"
)

// This file is the plain-Go reference implementation of the retry-chain
// analytics (docs/analytics.md). It follows the written definitions one call
// at a time, without the SQL's array positions, lookback or dedupe tricks, so
// that the differential test compares two independent readings of the same
// definitions.

// refGroupKey is one sequence of calls: a tool within a session key.
type refGroupKey struct{ tenant, server, sessionKey, tool string }

// refChain is one retry chain: its first call and its retries, in order.
type refChain struct {
	calls []pipeline.Call
}

func (ch refChain) first() pipeline.Call { return ch.calls[0] }

func (ch refChain) retried() bool { return len(ch.calls) > 1 }

func (ch refChain) recovered() bool { return ch.calls[len(ch.calls)-1].IsFailure == 0 }

func (ch refChain) argsChanged() bool {
	for _, c := range ch.calls[1:] {
		if c.ArgsHash != ch.first().ArgsHash {
			return true
		}
	}
	return false
}

// refDedupe keeps one copy of each call identity (the columns of the calls
// table's sort key), the one with the largest IngestedMs, the later one on a
// tie: what ReplacingMergeTree(ingested_ms) keeps and FINAL reads.
func refDedupe(calls []pipeline.Call) []pipeline.Call {
	type identity struct {
		tenant, server, tool, sessionKey string
		ms                               int64
		id                               uint64
	}
	latest := map[identity]int{}
	for i, c := range calls {
		k := identity{c.Tenant, c.Server, c.Tool, c.SessionKey, c.TimeMs, c.CallID}
		if j, ok := latest[k]; !ok || calls[j].IngestedMs <= c.IngestedMs {
			latest[k] = i
		}
	}
	out := make([]pipeline.Call, 0, len(latest))
	for i, c := range calls {
		k := identity{c.Tenant, c.Server, c.Tool, c.SessionKey, c.TimeMs, c.CallID}
		if latest[k] == i {
			out = append(out, c)
		}
	}
	return out
}

func refMatches(f queries.Filter, c pipeline.Call) bool {
	return (f.Tenant == "" || c.Tenant == f.Tenant) &&
		(len(f.Tenants) == 0 || slices.Contains(f.Tenants, c.Tenant)) &&
		(f.Server == "" || c.Server == f.Server) &&
		(f.Tool == "" || c.Tool == f.Tool)
}

func refInRange(f queries.Filter, ms int64) bool {
	return ms >= f.From.UnixMilli() && ms < f.To.UnixMilli()
}

// refSequences returns the calls that take part in the chain logic: deduped,
// matching the filter, not continuations, before the horizon; per tool and
// session key, ordered by (ts_ms, request_id, call_id). Every earlier call is
// kept: the reference needs no lookback window.
func refSequences(calls []pipeline.Call, f queries.Filter, horizonMs int64) [][]pipeline.Call {
	groups := map[refGroupKey][]pipeline.Call{}
	for _, c := range refDedupe(calls) {
		if !refMatches(f, c) || c.Continuation == 1 || c.TimeMs >= horizonMs {
			continue
		}
		k := refGroupKey{c.Tenant, c.Server, c.SessionKey, c.Tool}
		groups[k] = append(groups[k], c)
	}
	out := make([][]pipeline.Call, 0, len(groups))
	for _, g := range groups {
		slices.SortFunc(g, func(a, b pipeline.Call) int {
			return cmp.Or(cmp.Compare(a.TimeMs, b.TimeMs), cmp.Compare(a.RequestID, b.RequestID), cmp.Compare(a.CallID, b.CallID))
		})
		out = append(out, g)
	}
	return out
}

// refChains cuts every sequence into chains with a small state machine and
// returns the chains whose first call is in [f.From, f.To).
func refChains(calls []pipeline.Call, f queries.Filter, window time.Duration) []refChain {
	w := window.Milliseconds()
	horizon := f.To.UnixMilli() + queries.ChainHorizon*w
	var out []refChain
	for _, seq := range refSequences(calls, f, horizon) {
		var open *refChain // the chain the next call may extend
		var prevMs int64
		closeOpen := func() {
			if open != nil && refInRange(f, open.first().TimeMs) {
				out = append(out, *open)
			}
			open = nil
		}
		for _, c := range seq {
			if open != nil && c.TimeMs-prevMs <= w {
				open.calls = append(open.calls, c) // a retry
				if c.IsFailure == 0 {
					closeOpen() // the first non-failed call ends the chain
				}
			} else {
				closeOpen() // nothing came within the window
				if c.IsFailure == 1 {
					open = &refChain{calls: []pipeline.Call{c}}
				}
			}
			prevMs = c.TimeMs
		}
		closeOpen()
	}
	return out
}

func refRetryOutcomes(calls []pipeline.Call, f queries.Filter, window time.Duration) []queries.RetryOutcome {
	type key struct {
		client, tool, category string
		declared, expected     int8
	}
	acc := map[key]*queries.RetryOutcome{}
	for _, ch := range refChains(calls, f, window) {
		fc := ch.first()
		k := key{"", fc.Tool, fc.Category, fc.DeclaredRetryable, fc.ExpectedRetryable}
		if f.ByClient {
			k.client = fc.Client
		}
		r := acc[k]
		if r == nil {
			r = &queries.RetryOutcome{Client: k.client, Tool: k.tool, Category: k.category, DeclaredRetryable: k.declared, ExpectedRetryable: k.expected}
			acc[k] = r
		}
		r.Chains++
		r.Attempts += uint64(len(ch.calls))
		switch {
		case !ch.retried():
			r.NoRetry++
		case ch.recovered():
			r.RetryThenSuccess++
		default:
			r.RetryThenFail++
		}
		if ch.argsChanged() {
			r.ArgsChangedChains++
		}
	}
	var out []queries.RetryOutcome
	for _, r := range acc {
		if retried := r.RetryThenSuccess + r.RetryThenFail; retried > 0 {
			r.SuccessShare = float64(r.RetryThenSuccess) / float64(retried)
		}
		r.AvgAttempts = float64(r.Attempts) / float64(r.Chains)
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b queries.RetryOutcome) int {
		return cmp.Or(cmp.Compare(a.Client, b.Client), cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Category, b.Category),
			cmp.Compare(a.DeclaredRetryable, b.DeclaredRetryable), cmp.Compare(a.ExpectedRetryable, b.ExpectedRetryable))
	})
	return out
}

// refRecalls is the recalls endpoint by definition; with f.ByClient its
// rows are per client too, a failure's client being its session's.
func refRecalls(calls []pipeline.Call, f queries.Filter, window time.Duration) []queries.Recall {
	w := window.Milliseconds()
	type key struct{ client, tool, category string }
	acc := map[key]*queries.Recall{}
	for _, seq := range refSequences(calls, f, f.To.UnixMilli()+w) {
		for i, c := range seq {
			if c.IsFailure == 0 || !refInRange(f, c.TimeMs) {
				continue
			}
			k := key{"", c.Tool, c.Category}
			if f.ByClient {
				k.client = c.Client
			}
			r := acc[k]
			if r == nil {
				r = &queries.Recall{Client: k.client, Tool: c.Tool, Category: c.Category}
				acc[k] = r
			}
			r.Failures++
			if c.RetryAfterMs > 0 {
				r.WithRetryAfter++
			}
			if i+1 < len(seq) && seq[i+1].TimeMs-c.TimeMs <= w {
				r.WithNextCall++
				if seq[i+1].ArgsHash == c.ArgsHash {
					r.Unchanged++
				}
				if c.RetryAfterMs > 0 && seq[i+1].TimeMs-c.TimeMs < c.RetryAfterMs {
					r.BeforeRetryAfter++
				}
			}
		}
	}
	var out []queries.Recall
	for _, r := range acc {
		r.Rate = float64(r.Unchanged) / float64(r.Failures)
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b queries.Recall) int {
		return cmp.Or(cmp.Compare(a.Client, b.Client), cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Category, b.Category))
	})
	return out
}

// refMisclassifications is the misclassifications endpoint by definition.
// nonIdempotent holds the (tenant, server, tool)s whose definition in force
// at f.To declares neither idempotentHint nor readOnlyHint true: their
// chains after an ambiguous failure are retried_non_idempotent.
func refMisclassifications(calls []pipeline.Call, f queries.Filter, window time.Duration, minChains int64, nonIdempotent map[[3]string]bool) []queries.Misclassification {
	minN := uint64(max(minChains, 1))
	type key struct{ tool, category string }
	type population struct{ chains, calls, recovered uint64 }
	type kinds struct{ retryable, nonRetryable, wasted, nonIdempotent population }
	acc := map[key]*kinds{}
	for _, ch := range refChains(calls, f, window) {
		fc := ch.first()
		k := key{fc.Tool, fc.Category}
		if acc[k] == nil {
			acc[k] = &kinds{}
		}
		add := func(p *population) {
			p.chains++
			p.calls += uint64(len(ch.calls))
			if ch.recovered() {
				p.recovered++
			}
		}
		if !ch.retried() {
			continue
		}
		if fc.DeclaredRetryable == 1 || fc.ExpectedRetryable == 1 {
			add(&acc[k].retryable)
		}
		if (fc.DeclaredRetryable == 0 || fc.ExpectedRetryable == 0) && !ch.argsChanged() {
			add(&acc[k].nonRetryable)
		}
		if fc.ExpectedRetryable == 0 && !ch.argsChanged() {
			add(&acc[k].wasted)
		}
		ambiguous := fc.Category == string(classify.UpstreamTimeout) || fc.Category == string(classify.Unavailable)
		if ambiguous && nonIdempotent[[3]string{fc.Tenant, fc.Server, fc.Tool}] {
			add(&acc[k].nonIdempotent)
		}
	}
	var out []queries.Misclassification
	row := func(kind string, k key, p population) queries.Misclassification {
		return queries.Misclassification{Kind: kind, Tool: k.tool, Category: k.category,
			Chains: p.chains, Calls: p.calls, Recovered: p.recovered, Total: p.chains}
	}
	for k, a := range acc {
		if p := a.retryable; p.chains >= minN && float64(p.recovered)/float64(p.chains) < 0.1 {
			r := row(queries.KindRetryableNeverRecovers, k, p)
			r.Evidence = fmt.Sprintf("%d of %d retried chains recovered (%d%%)", p.recovered, p.chains, 100*p.recovered/p.chains)
			out = append(out, r)
		}
		if p := a.nonRetryable; p.chains >= minN && float64(p.recovered)/float64(p.chains) >= 0.5 {
			r := row(queries.KindNonRetryableRecovers, k, p)
			r.Evidence = fmt.Sprintf("%d of %d same-argument retried chains recovered (%d%%)", p.recovered, p.chains, 100*p.recovered/p.chains)
			out = append(out, r)
		}
		if p := a.wasted; p.chains >= minN {
			r := row(queries.KindRetriedNonRetryable, k, p)
			r.Evidence = refWastedEvidence(p.chains, p.calls-p.chains, p.recovered)
			out = append(out, r)
		}
		if p := a.nonIdempotent; p.chains >= minN {
			r := row(queries.KindRetriedNonIdempotent, k, p)
			retries := p.calls - p.chains
			r.Evidence = fmt.Sprintf("%d %s retried after a timeout or no answer (%d %s), %d recovered; the tool declares neither idempotentHint nor readOnlyHint, so a retry may repeat its effect",
				p.chains, refNoun(p.chains, "chain", "chains"), retries, refNoun(retries, "retry", "retries"), p.recovered)
			out = append(out, r)
		}
	}
	type flags struct{ misflagged, total uint64 }
	calls2 := map[key]*flags{}
	for _, c := range refDedupe(calls) {
		if !refMatches(f, c) || !refInRange(f, c.TimeMs) {
			continue
		}
		k := key{c.Tool, c.Category}
		if calls2[k] == nil {
			calls2[k] = &flags{}
		}
		calls2[k].total++
		calls2[k].misflagged += uint64(c.Misflagged)
	}
	for k, fl := range calls2 {
		if fl.misflagged >= minN {
			out = append(out, queries.Misclassification{Kind: queries.KindMisflagged, Tool: k.tool, Category: k.category,
				Calls: fl.misflagged, Total: fl.total,
				Evidence: fmt.Sprintf("%d of %d calls have an isError flag that contradicts the category (%d%%)",
					fl.misflagged, fl.total, 100*fl.misflagged/fl.total)})
		}
	}
	slices.SortFunc(out, func(a, b queries.Misclassification) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Category, b.Category))
	})
	return out
}

func refWastedEvidence(chains, retries, recovered uint64) string {
	return fmt.Sprintf("%d %s retried with unchanged arguments (%d %s), %d recovered",
		chains, refNoun(chains, "chain", "chains"), retries, refNoun(retries, "retry", "retries"), recovered)
}

func refNoun(n uint64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// refRetryLoops is the retry loops endpoint by definition: the chains of
// refChains with at least o.MinAttempts calls, the most calls first, then
// the latest start, then by tenant, server, session key and tool; the first
// o.Limit of them.
func refRetryLoops(calls []pipeline.Call, f queries.Filter, window time.Duration, o queries.RetryLoopsOptions) []queries.RetryLoop {
	var out []queries.RetryLoop
	for _, ch := range refChains(calls, f, window) {
		if int64(len(ch.calls)) < o.MinAttempts {
			continue
		}
		fc, lc := ch.first(), ch.calls[len(ch.calls)-1]
		outcome := "retry_then_fail"
		if ch.recovered() {
			outcome = "retry_then_success"
		}
		out = append(out, queries.RetryLoop{
			Tenant: fc.Tenant, Server: fc.Server, Tool: fc.Tool, Session: fc.SessionKey, Client: fc.Client,
			Start: time.UnixMilli(fc.TimeMs).UTC(), End: time.UnixMilli(lc.TimeMs).UTC(), DurationMs: lc.TimeMs - fc.TimeMs,
			Attempts: uint64(len(ch.calls)), Outcome: outcome, ArgsChanged: ch.argsChanged(),
			Category: fc.Category, DeclaredRetryable: fc.DeclaredRetryable, ExpectedRetryable: fc.ExpectedRetryable,
			FirstCallID: fmt.Sprint(fc.CallID),
		})
	}
	slices.SortFunc(out, func(a, b queries.RetryLoop) int {
		return cmp.Or(cmp.Compare(b.Attempts, a.Attempts), b.Start.Compare(a.Start), cmp.Compare(a.Tenant, b.Tenant),
			cmp.Compare(a.Server, b.Server), cmp.Compare(a.Session, b.Session), cmp.Compare(a.Tool, b.Tool))
	})
	return out[:min(len(out), int(o.Limit))]
}
