package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // OTLP/gRPC exporters may compress with gzip
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Traces decodes the tools/call spans of td into classified Calls, merging
// the spans of one call found in td (an inner span into its outer span, a
// client span with its server span). Other spans are skipped; bad spans are
// rejected, each with a dead letter, and the first reason is in msg. It
// keeps no state between calls: OTLP.Consume adds pairing across requests.
// Traces is safe for concurrent use.
func (p *Processor) Traces(td ptrace.Traces, cfg OTLPConfig, now time.Time) (calls []Call, dead []DeadLetter, rejected int, msg string) {
	d := &traceDecoder{p: p, cfg: cfg.withDefaults(), now: now}
	facts, dead, st := d.decodeTraces(td, nil)
	facts = pairInRequest(facts, nil)
	for i := range facts {
		c, err := d.build(&facts[i], nil)
		if err != nil {
			d.rejectFacts(&st, &dead, &facts[i], err)
			continue
		}
		if calls == nil {
			calls = make([]Call, 0, len(facts)-i)
		}
		calls = append(calls, c)
	}
	return calls, dead, st.rejected, st.message(d.cfg)
}

// rejectFacts rejects a call that build refused (arguments nested too
// deep, for example); the dead letter holds f's capture line. A row can be
// refused long after it was built (admit), so the line is written here.
func (d *traceDecoder) rejectFacts(st *tracesStats, dead *[]DeadLetter, f *spanFacts, err error) {
	st.rejected++
	st.reasons["bad_span"]++
	reason := fmt.Sprintf("span %d (%q, span id %s): %s", f.index, cut(f.name, 64), f.span, err)
	if st.firstErr == "" {
		st.firstErr = reason
	}
	tenant := d.p.Decode.deadLetterTenant(f.tenant)
	if d.borrowed {
		tenant = strings.Clone(tenant)
	}
	line := d.line(f)
	*dead = append(*dead, DeadLetter{Received: d.now, Tenant: tenant, Source: sourceOTLP, Line: uint32(f.index),
		Reason: reason, Payload: string(line[:utf8Cut(line, MaxDeadLetterPayload)])})
}

// message is the partial-success message: the first rejection and any
// attributes ignored for their size.
func (st *tracesStats) message(cfg OTLPConfig) string {
	msg := ""
	if st.rejected > 0 {
		msg = fmt.Sprintf("%d spans rejected; first: %s", st.rejected, st.firstErr)
	}
	if st.tooLarge > 0 {
		if msg != "" {
			msg += "; "
		}
		msg += fmt.Sprintf("%d attribute values over %d bytes ignored (raise -otlp-max-attribute-bytes)", st.tooLarge, cfg.MaxAttributeBytes)
	}
	return msg
}

// OTLP receives OTLP traces over HTTP (POST /v1/traces) and gRPC, keeps
// the tools/call spans as Calls and queues them on the Batcher. Both
// transports go through Consume. It pairs the client and server spans of
// one call across requests; Run releases spans whose pair window passed,
// and Flush releases the rest on shutdown. OTLP is safe for concurrent use.
type OTLP struct {
	ptraceotlp.UnimplementedGRPCServer

	proc    *Processor
	batcher *Batcher
	m       *Metrics
	http    HTTPConfig
	cfg     OTLPConfig
	log     *slog.Logger
	now     func() time.Time
	pair    *pairer
	pool    scratchPool
	// builders admits GOMAXPROCS requests at a time to building their
	// rows and queueing them (not to the fsync that follows).
	builders chan struct{}
}

// NewOTLP returns the OTLP receiver. Body limits come from httpCfg, as for
// POST /v1/calls.
func NewOTLP(proc *Processor, b *Batcher, m *Metrics, httpCfg HTTPConfig, cfg OTLPConfig, log *slog.Logger) *OTLP {
	if httpCfg.MaxBodyBytes <= 0 {
		httpCfg.MaxBodyBytes = 16 << 20
	}
	if httpCfg.MaxDecompressedBytes <= 0 {
		httpCfg.MaxDecompressedBytes = 8 * httpCfg.MaxBodyBytes
	}
	cfg = cfg.withDefaults()
	return &OTLP{proc: proc, batcher: b, m: m, http: httpCfg, cfg: cfg, log: log, now: time.Now,
		pair:     newPairer(cfg.PairWindow, cfg.PairCapacity, cfg.PairMaxBytes, m),
		builders: make(chan struct{}, runtime.GOMAXPROCS(0))}
}

// NewOTLPGRPCServer returns a gRPC server with the OTLP trace service of o
// registered. Messages are bounded by -max-decompressed-bytes after
// decompression.
func NewOTLPGRPCServer(o *OTLP) *grpc.Server {
	s := grpc.NewServer(grpc.MaxRecvMsgSize(int(min(o.http.MaxDecompressedBytes, 1<<31-1))))
	ptraceotlp.RegisterGRPCServer(s, o)
	return s
}

// Consume is the path shared by both transports: decode td, pair its
// spans, and queue the calls that are ready. It returns the rejected span
// count and the partial-success message. The only error is ErrBufferFull
// (wrapped), in which case nothing of td was accepted.
func (o *OTLP) Consume(td ptrace.Traces) (rejected int, msg string, err error) {
	s := o.pool.get()
	defer o.pool.put(s)
	return o.consume(td, s)
}

// consume is Consume with the request's reusable memory.
func (o *OTLP) consume(td ptrace.Traces, s *otlpScratch) (rejected int, msg string, err error) {
	now := o.now()
	d := &traceDecoder{p: o.proc, cfg: o.cfg, now: now}
	facts, dead, st := d.decodeTraces(td, s.facts[:0])
	s.facts = facts[:0]
	return o.queue(d, s, facts, dead, st, now)
}

// consumeProto is consume for a protobuf body read by the wire reader,
// without pdata's objects. ok is false, and nothing was queued or
// counted, when the body needs pdata (see wireTraces and decodeViews);
// the caller then unmarshals it with pdata and calls consume.
func (o *OTLP) consumeProto(body []byte, s *otlpScratch) (rejected int, msg string, ok bool, err error) {
	if !s.wire.read(body) {
		return 0, "", false, nil
	}
	now := o.now()
	d := &traceDecoder{p: o.proc, cfg: o.cfg, now: now, borrowed: true}
	facts, dead, st, ok := d.decodeViews(s.wire.views, s.facts[:0])
	s.facts = facts[:0]
	if !ok {
		return 0, "", false, nil
	}
	rejected, msg, err = o.queue(d, s, facts, dead, st, now)
	return rejected, msg, true, err
}

// linkableSpan is a span of a request that may meet another side in the
// pairer, under keys. alone is the row it makes when it meets nothing,
// built before the pairer's lock is taken when built is set
// (-otlp-pair-window 0: such a span is stored at once, unless the pairer
// already had an entry for it when the request looked), so that requests
// do not wait for each other's decoding and classification.
type linkableSpan struct {
	f     spanFacts   // views the request
	pf    packedFacts // what the pairer keeps of it
	keys  []linkKey
	alone Call
	id    identity // alone's, in pf's buffer, when built without error
	err   error
	built bool
	met   bool   // the pairer had an entry for it when the request probed
	gen   uint64 // the pairer's generation then
}

// queue pairs the facts of one request, builds their Calls and queues
// them with the request's dead letters.
func (o *OTLP) queue(d *traceDecoder, s *otlpScratch, facts []spanFacts, dead []DeadLetter, st tracesStats, now time.Time) (rejected int, msg string, err error) {
	if s.inRequest == nil {
		s.inRequest = map[linkKey]int{}
	}
	idx := s.inRequest
	if len(facts) > maxKeptIndex {
		idx = nil // a map does not shrink: keep none this large
	}
	facts = pairInRequest(facts, idx)

	// The rows a request builds live until they are queued, so more
	// builders than cores only add memory: 16 exporters of 1,000 linked
	// spans each, all building at once, held the heap against
	// -memory-limit and the collector took a quarter of the CPU. A request
	// gives its place up once its rows are queued, before its fsync.
	o.builders <- struct{}{}
	built := sync.OnceFunc(func() { <-o.builders })
	defer built()

	// Calls that cannot meet another side are built without the lock, and
	// so are the rows of linkable ones that meet nothing when nothing is
	// held.
	calls := s.calls[:0]
	if cap(calls) < len(facts) {
		calls = make([]Call, 0, len(facts))
	}
	linkable := s.linkable[:0]
	for i := range facts {
		f := &facts[i]
		if keys := f.pairKeys(); len(keys) > 0 {
			linkable = append(linkable, linkableSpan{f: *f, keys: keys})
			continue
		}
		c, err := d.build(f, nil)
		if err != nil {
			d.rejectFacts(&st, &dead, f, err)
			continue
		}
		calls = append(calls, c)
	}
	o.prepare(d, linkable)
	s.calls = calls[:0] // admit may append past it; the array is the one kept
	s.linkable = linkable[:0]
	accepted := len(calls)

	// Linkable calls meet what the pairer holds. A call that meets an
	// entry another call of this request already met waits for the next
	// round, which sees the first one's result.
	for len(linkable) > 0 || len(calls) > 0 || len(dead) > 0 {
		n, next, v, err := o.admit(d, &st, calls, dead, linkable, now)
		built() // the rows are queued (or refused): only the fsync is left
		if err == nil {
			err = o.settle(v)
		}
		if err != nil {
			return 0, "", err
		}
		accepted += n
		calls, dead, linkable = nil, nil, next
	}

	o.m.lines.WithLabelValues(sourceOTLP, "accepted").Add(float64(accepted))
	o.m.lines.WithLabelValues(sourceOTLP, "skipped").Add(float64(st.skipped))
	o.m.lines.WithLabelValues(sourceOTLP, "rejected").Add(float64(st.rejected))
	for reason, n := range st.reasons {
		o.m.rejected.WithLabelValues(reason).Add(float64(n))
	}
	if st.tooLarge > 0 {
		o.m.rejected.WithLabelValues("attribute_too_large").Add(float64(st.tooLarge))
	}
	return st.rejected, st.message(o.cfg), nil
}

// prepare does for linkable spans what can be done before admit locks the
// pairer. With -otlp-pair-window 0 it builds the rows of spans that meet
// nothing now: a span the pairer has an entry for (the other side of a
// call stored earlier) would build a merged row instead, and building its
// alone row too doubled the work of every second side. What the pairer
// holds may change before admit locks it; admit builds whatever its
// decision needs that is not built here. It packs every span's facts,
// which the pairer may keep, and a row built alone's identity in the same
// buffer.
func (o *OTLP) prepare(d *traceDecoder, linkable []linkableSpan) {
	probed := o.pair.window == 0 && len(linkable) > 0
	if probed {
		o.pair.probe(linkable)
	}
	for i := range linkable {
		l := &linkable[i]
		var row *Call
		if probed && !l.met {
			l.alone, l.err = d.build(&l.f, nil)
			l.built = true
			if l.err == nil {
				row = &l.alone
			}
		}
		// Packed right after the build, while the span's bytes are still
		// in the CPU's cache.
		l.pf, l.id = packFacts(&l.f, row)
	}
}

// Steps of admit: what one linkable call does to the pairer.
const (
	stepHold uint8 = iota
	stepEmit
	stepMergeHeld
	stepMergeKept
	stepFoldHeld
	stepFoldKept
	stepDuplicate
	stepRestore // a retry of a span whose stored row's fsync failed: store the row again
)

// admitStep is what one linkable call does in admit.
type admitStep struct {
	// f is the span's facts (the linkable span's own, not copied:
	// a step is a few words, where a spanFacts is 360 bytes, and a
	// request makes a step for each of up to thousands of spans);
	// once built, those of its fold or merge with e's.
	f    *spanFacts
	pf   *packedFacts // f packed, while f is the linkable span's own facts
	id   *identity    // the identity of its alone row, packed with pf
	keys []linkKey
	e    *pairEntry // the entry met, if any
	kind uint8
	call int    // index in calls of the row it emits, -1 for none
	seq  uint64 // a hold's sequence number in the pair log
}

// admit queues calls and dead letters with the rows that the linkable
// calls produce against the pairer, all or nothing: when the queue is
// full nothing changes. It returns the linkable calls accepted and those
// deferred to another round.
//
// The pairer's lock is held while the calls meet it and are queued, not
// across the spool's fsync, which the caller runs with settle: requests
// share fsyncs as the NDJSON receiver's do. The vouch returned names what
// the request's answer stands for: its own record, and the records holding
// the rows of what it found already stored (an exporter retry).
func (o *OTLP) admit(d *traceDecoder, st *tracesStats, calls []Call, dead []DeadLetter, linkable []linkableSpan, now time.Time) (int, []linkableSpan, vouch, error) {
	if len(linkable) == 0 {
		// Nothing meets the pairer: queue without its lock.
		r, err := o.enqueue(calls, dead)
		return 0, nil, vouch{durable: r}, err
	}
	p := o.pair
	p.mu.Lock()
	steps := make([]admitStep, 0, len(linkable))
	var deferred []linkableSpan
	room := p.capacity - p.nHeld
	var promised int64 // footprint of this request's holds
	met := map[*pairEntry]bool{}
	for i := range linkable {
		l := &linkable[i] // a linkableSpan is a span's facts and its row: not copied
		s := admitStep{f: &l.f, pf: &l.pf, keys: l.keys, call: -1}
		var rel uint8
		if !l.built || l.gen != p.gen {
			// A span built alone met nothing when the request probed: it
			// can meet something now only if an entry was registered since.
			s.e, rel = p.find(s.keys, s.f)
		}
		if s.e != nil && met[s.e] && rel != relSame {
			deferred = append(deferred, *l)
			continue
		}
		switch rel {
		case relNone:
			s.kind = stepEmit
			// A call with both sides waits for nothing: it is stored
			// at once and remembered.
			if p.window > 0 && room > 0 && s.f.side != sideBoth {
				if n, ok := p.canHold(s.pf, s.keys, promised); ok {
					s.kind = stepHold
					room--
					promised += n
				}
			}
		case relSame:
			s.kind = stepDuplicate // an exporter retry, or a side the row already has
			if s.e.state == entryKept && s.e.unsafe {
				s.kind = stepRestore
			}
		case relFold:
			ef := s.e.p.unpack()
			outer, inner, _ := nests(&ef, s.f)
			f := fold(*outer, *inner)
			s.f, s.pf = &f, nil
			s.kind = stepFoldKept
			if s.e.state == entryHeld {
				s.kind = stepFoldHeld
			}
		case relPair:
			s.kind = stepMergeKept
			if s.e.state == entryHeld {
				s.kind = stepMergeHeld
			}
		}
		if s.e != nil {
			met[s.e] = true
		}
		var c Call
		var m *spanFacts // a merge's facts
		var err error
		switch s.kind {
		case stepEmit:
			if l.built {
				c, err = l.alone, l.err
				if err == nil {
					s.id = &l.id
				}
			} else {
				c, err = d.build(s.f, nil)
			}
		case stepMergeHeld:
			m = pairFacts(s.e.p.unpack(), *s.f)
			c, err = d.build(m, nil)
		case stepMergeKept:
			m = pairFacts(s.e.p.unpack(), *s.f)
			c, err = d.build(m, &s.e.id)
		case stepFoldKept:
			c, err = d.build(s.f, &s.e.id)
		case stepRestore:
			f := s.e.p.unpack()
			c, err = d.build(&f, &s.e.id)
		}
		if err != nil {
			d.rejectFacts(st, &dead, s.f, err)
			continue
		}
		if s.kind == stepMergeHeld || s.kind == stepMergeKept {
			s.f, s.pf = m, nil
		}
		if s.kind != stepHold && s.kind != stepFoldHeld && s.kind != stepDuplicate {
			s.call = len(calls)
			calls = append(calls, c)
		}
		steps = append(steps, s)
	}
	logStart, logEnd, err := o.logSteps(steps, calls, now)
	if err != nil {
		p.mu.Unlock()
		return 0, nil, vouch{}, err
	}
	r, err := o.enqueue(calls, dead)
	if err != nil {
		if logEnd != (SpoolPos{}) {
			if uerr := p.log.undo(); uerr != nil {
				// The next start holds this request's spans, which its
				// sender is told to send again: the copy a retry makes is
				// dropped then (replayPairLog keeps one hold per span).
				o.log.Warn("pair log: undo a refused request's holds", "err", uerr)
			}
		}
		p.mu.Unlock()
		return 0, nil, vouch{}, err
	}
	v := vouch{durable: r, relied: make([]reliance, 0, len(steps)), logSync: logEnd, log: p.log}
	stored := func(e *pairEntry) {
		e.end, e.unsafe = r.end, false
		v.relied = append(v.relied, reliance{e, r.end})
	}
	for _, s := range steps {
		switch s.kind {
		case stepHold:
			e := p.hold(*s.pf, s.keys, now)
			e.seq, e.logStart, e.logEnd = s.seq, logStart, logEnd
		case stepEmit:
			e := &pairEntry{p: *s.pf, merged: s.f.side == sideBoth}
			p.register(e, s.keys)
			if s.id != nil {
				p.keep(e, *s.id, now)
			} else {
				p.keep(e, identityOf(&calls[s.call]), now)
			}
			stored(e)
		case stepMergeHeld:
			p.register(s.e, s.keys)
			s.e.p, s.e.merged = pack(s.f), true
			p.keep(s.e, identityOf(&calls[s.call]), now)
			stored(s.e)
			p.m.mergedHeld.Inc()
		case stepMergeKept:
			p.register(s.e, s.keys)
			s.e.p, s.e.merged = pack(s.f), true
			s.e.id.detach()
			s.e.id.ingestedMs = calls[s.call].IngestedMs
			p.account(s.e)
			stored(s.e)
			p.m.mergedLate.Inc()
		case stepFoldHeld:
			p.register(s.e, s.keys)
			s.e.p = pack(s.f)
			p.account(s.e)
			if logEnd != (SpoolPos{}) {
				s.e.logEnd = logEnd
			}
		case stepFoldKept:
			p.register(s.e, s.keys)
			s.e.p = pack(s.f)
			s.e.id.detach()
			s.e.id.ingestedMs = calls[s.call].IngestedMs
			p.account(s.e)
			stored(s.e)
		case stepRestore:
			s.e.id.ingestedMs = calls[s.call].IngestedMs
			stored(s.e)
		case stepDuplicate:
			if s.e.state == entryKept {
				v.durable = v.durable.Later(Receipt{end: s.e.end})
				v.relied = append(v.relied, reliance{s.e, s.e.end})
			} else if v.logSync.before(s.e.logEnd) {
				v.logSync = s.e.logEnd // held: its hold must be durable
			}
		}
	}
	p.trim(now)
	p.mu.Unlock()
	return len(steps), deferred, v, nil
}

// logSteps writes what admit's steps do to held spans to the pair log, in
// one record, before their rows are queued: new holds (giving each its
// sequence number), held spans whose facts changed (an inner span folded
// in), and held spans merged with their other side, with the merged row.
// It returns where the record starts and ends, zero when there is no log
// or nothing to write. p.mu is held.
func (o *OTLP) logSteps(steps []admitStep, calls []Call, now time.Time) (start, end SpoolPos, err error) {
	l := o.pair.log
	if l == nil {
		return start, end, nil
	}
	var ops []pairOp
	for i := range steps {
		s := &steps[i]
		switch s.kind {
		case stepHold:
			s.seq = l.next()
			ops = append(ops, pairOp{op: opHold, seq: s.seq, due: now.Add(o.pair.window).UnixMilli(), keys: s.keys, f: s.f})
		case stepFoldHeld:
			keys := append(slices.Clip(s.e.keys), s.keys...)
			ops = append(ops, pairOp{op: opHold, seq: s.e.seq, due: s.e.due.UnixMilli(), keys: keys, f: s.f})
		case stepMergeHeld:
			ops = append(ops, pairOp{op: opMerge, seq: s.e.seq, row: &calls[s.call]})
		}
	}
	if len(ops) == 0 {
		return start, end, nil
	}
	return l.append(ops)
}

// vouch is what a request's answer stands for once admit queued its rows:
// the spool records to make durable, and the pairer entries whose stored
// rows those records hold, each with the record end it had then.
type vouch struct {
	durable Receipt
	relied  []reliance
	logSync SpoolPos // the pair log's records it relies on end here
	log     *pairLog
}

type reliance struct {
	e   *pairEntry
	end SpoolPos
}

// settle fsyncs what v names. When the fsync fails, the entries still at
// the record v relied on are marked unsafe, so that the sender's retry
// stores their rows again rather than being taken as a duplicate of a row
// that may be lost.
func (o *OTLP) settle(v vouch) error {
	// The pair log's fsync, then the spool's: run at once, the two
	// measured no faster (they wait on the same disk; BENCHMARKS.md).
	if err := v.log.sync(v.logSync); err != nil {
		return err
	}
	err := o.batcher.Sync(v.durable)
	if err != nil && len(v.relied) > 0 {
		p := o.pair
		p.mu.Lock()
		for _, x := range v.relied {
			if x.e.state == entryKept && x.e.end == x.end {
				x.e.unsafe = true
			}
		}
		p.mu.Unlock()
	}
	return err
}

// pairFacts merges an entry's facts with the other side's, in a new
// spanFacts: a merge is rare beside the spans stored alone.
func pairFacts(a, b spanFacts) *spanFacts {
	var m spanFacts
	if a.side == sideClient {
		m = mergePair(a, b)
	} else {
		m = mergePair(b, a)
	}
	return &m
}

// enqueue queues calls and dead letters, without the spool's fsync, and
// counts the calls by category.
func (o *OTLP) enqueue(calls []Call, dead []DeadLetter) (Receipt, error) {
	if len(calls) == 0 && len(dead) == 0 {
		return Receipt{}, nil
	}
	r, err := o.batcher.Enqueue(calls, dead)
	if err != nil {
		return Receipt{}, err
	}
	o.m.countClassified(calls)
	return r, nil
}

// release emits held spans whose window has passed (every held span when
// all is set) as rows of one side. When the queue lacks room they stay
// held and release reports false. No sender waits on these rows, so the
// fsync runs under the pairer's lock: an entry becomes a remembered row
// only once its row is durable.
func (o *OTLP) release(all bool) bool {
	now := o.now()
	p := o.pair
	p.mu.Lock()
	defer p.mu.Unlock()
	due := p.expired(now, all)
	if len(due) > 0 {
		if !o.batcher.hasRoom(len(due)) {
			p.compact(now)
			return false
		}
		d := &traceDecoder{p: o.proc, cfg: o.cfg, now: now}
		calls := make([]Call, 0, len(due))
		var dead []DeadLetter
		var st tracesStats
		st.reasons = map[string]int{}
		built := due[:0:0]
		var resolved []pairOp // for the pair log, once the rows are durable
		var gone []*pairEntry
		for _, e := range due {
			if p.log != nil {
				resolved = append(resolved, pairOp{op: opResolve, seq: e.seq})
			}
			f := e.p.unpack()
			c, err := d.build(&f, nil)
			if err != nil {
				d.rejectFacts(&st, &dead, &f, err)
				gone = append(gone, e)
				continue
			}
			calls = append(calls, c)
			built = append(built, e)
		}
		r, err := o.enqueue(calls, dead)
		if err == nil {
			err = o.batcher.Sync(r)
		}
		if err != nil {
			p.compact(now)
			return false
		}
		for _, e := range gone {
			p.forget(e)
		}
		for i, e := range built {
			p.keep(e, identityOf(&calls[i]), now)
			e.end = r.end
		}
		p.trim(now)
		if len(resolved) > 0 {
			// Not written, these records leave the spans held in the log:
			// the next start stores their rows again, with their identity.
			if _, _, err := p.log.append(resolved); err != nil {
				o.log.Warn("pair log: record spans stored alone", "spans", len(resolved), "err", err)
			}
		}
	}
	p.compact(now)
	if p.log != nil && !o.queueReplayed(p.log) {
		return false // Flush waits for them, as for held spans
	}
	if p.log != nil {
		var err error
		if p.log.sp.cfg.Fsync == FsyncInterval {
			err = p.log.sp.syncDue()
		}
		if err == nil {
			err = o.commitPairLog()
		}
		if err != nil {
			o.log.Warn("pair log: move its checkpoint", "err", err)
		}
	}
	return true
}

// Run releases held spans as their pair window passes, until ctx is done.
// Flush releases the rest.
func (o *OTLP) Run(ctx context.Context) {
	tick := min(max(o.cfg.PairWindow/4, 50*time.Millisecond), time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			o.release(false)
		}
	}
}

// Flush emits every held span as a row of its side, waiting for room in
// the queue until ctx ends. Call it after the receivers stopped and
// before the Batcher drains.
func (o *OTLP) Flush(ctx context.Context) error {
	for !o.release(true) {
		select {
		case <-ctx.Done():
			p := o.pair
			p.mu.Lock()
			held, l := p.nHeld, p.log
			var replayed int
			if l != nil {
				replayed = len(l.replayed)
			}
			p.mu.Unlock()
			if l == nil {
				o.m.dropped.WithLabelValues("shutdown_timeout").Add(float64(held))
				return fmt.Errorf("flush otlp: %d held spans not queued: %w", held, ctx.Err())
			}
			return fmt.Errorf("flush otlp: %d held spans and %d recovered merged rows not queued, left in the pair log for the next start: %w",
				held, replayed, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// Held returns the spans waiting for their other side.
func (o *OTLP) Held() int {
	held, _ := o.pair.counts()
	return held
}

// Export implements the OTLP/gRPC trace service.
func (o *OTLP) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	rejected, msg, err := o.Consume(req.Traces())
	if err != nil {
		if errors.Is(err, ErrBufferFull) {
			return ptraceotlp.NewExportResponse(), status.Error(codes.Unavailable, err.Error())
		}
		return ptraceotlp.NewExportResponse(), status.Error(codes.Internal, err.Error())
	}
	return exportResponse(rejected, msg), nil
}

func exportResponse(rejected int, msg string) ptraceotlp.ExportResponse {
	resp := ptraceotlp.NewExportResponse()
	if rejected > 0 || msg != "" {
		ps := resp.PartialSuccess()
		ps.SetRejectedSpans(int64(rejected))
		ps.SetErrorMessage(msg)
	}
	return resp
}

// Encodings of OTLP/HTTP bodies.
const (
	otlpProtobuf = "application/x-protobuf"
	otlpJSON     = "application/json"
)

// ServeHTTP handles POST /v1/traces: an OTLP ExportTraceServiceRequest in
// protobuf or JSON, gzip accepted. It answers 200 with an
// ExportTraceServiceResponse (partial success when spans were rejected),
// and errors as a google.rpc.Status, both in the request's encoding.
func (o *OTLP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ct := otlpJSON
	resp, err := o.traces(r, &ct)
	if err != nil {
		st, code := http.StatusInternalServerError, codes.Internal
		var he *httpError
		switch {
		case errors.As(err, &he):
			st = he.status
			code = codes.InvalidArgument
			o.m.rejected.WithLabelValues(he.reason).Inc()
		case errors.Is(err, ErrBufferFull):
			st, code = http.StatusServiceUnavailable, codes.Unavailable
			w.Header().Set("Retry-After", "5")
		}
		if st >= 500 && st != http.StatusServiceUnavailable {
			o.log.Error("otlp request failed", "err", err)
		}
		writeOTLP(w, st, ct, status.New(code, err.Error()).Proto())
		return
	}
	var b []byte
	if ct == otlpProtobuf {
		b, err = resp.MarshalProto()
	} else {
		b, err = resp.MarshalJSON()
	}
	if err != nil {
		writeOTLP(w, http.StatusInternalServerError, ct, status.New(codes.Internal, "encode response: "+err.Error()).Proto())
		return
	}
	writeBody(w, http.StatusOK, ct, b)
}

func (o *OTLP) traces(r *http.Request, ct *string) (ptraceotlp.ExportResponse, error) {
	var none ptraceotlp.ExportResponse
	if r.Method != http.MethodPost {
		return none, &httpError{http.StatusMethodNotAllowed, "method", "use POST with an OTLP ExportTraceServiceRequest body"}
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case err != nil:
		return none, &httpError{http.StatusUnsupportedMediaType, "content_type",
			fmt.Sprintf("bad Content-Type %q: send %s or %s", r.Header.Get("Content-Type"), otlpProtobuf, otlpJSON)}
	case mt == otlpProtobuf, mt == otlpJSON:
		*ct = mt
	default:
		return none, &httpError{http.StatusUnsupportedMediaType, "content_type",
			fmt.Sprintf("Content-Type %q not supported: send %s or %s", mt, otlpProtobuf, otlpJSON)}
	}
	body := io.Reader(http.MaxBytesReader(nil, r.Body, o.http.MaxBodyBytes))
	size := r.ContentLength // sizes the body buffer; a larger one fails below anyway
	if size > o.http.MaxBodyBytes {
		size = -1
	}
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := o.pool.gzip.reader(body)
		if err != nil {
			return none, &httpError{http.StatusBadRequest, "bad_gzip", "gzip body: " + err.Error()}
		}
		defer o.pool.gzip.put(zr)
		body = &limitedReader{r: zr, left: o.http.MaxDecompressedBytes}
		size = -1
	default:
		return none, &httpError{http.StatusUnsupportedMediaType, "content_encoding",
			fmt.Sprintf("Content-Encoding %q not supported: send gzip or none", enc)}
	}
	s := o.pool.get()
	defer o.pool.put(s)
	raw, err := readAllInto(s.body, body, size)
	s.body = raw[:0]
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return none, &httpError{http.StatusRequestEntityTooLarge, "body_too_large",
				fmt.Sprintf("body exceeds %d bytes: export smaller batches, or raise -max-body-bytes", o.http.MaxBodyBytes)}
		case errors.Is(err, errDecompressedTooLarge):
			return none, &httpError{http.StatusRequestEntityTooLarge, "decompressed_too_large",
				fmt.Sprintf("body exceeds %d bytes after decompression: export smaller batches, or raise -max-decompressed-bytes", o.http.MaxDecompressedBytes)}
		default:
			return none, &httpError{http.StatusBadRequest, "bad_body", "read body: " + err.Error()}
		}
	}
	if *ct == otlpProtobuf {
		if rejected, msg, ok, err := o.consumeProto(raw, s); ok {
			if err != nil {
				return none, err
			}
			return exportResponse(rejected, msg), nil
		}
	}
	req := ptraceotlp.NewExportRequest()
	if *ct == otlpProtobuf {
		err = req.UnmarshalProto(raw)
	} else {
		err = req.UnmarshalJSON(raw)
	}
	if err != nil {
		return none, &httpError{http.StatusBadRequest, "bad_otlp",
			fmt.Sprintf("decode %s ExportTraceServiceRequest: %v", *ct, err)}
	}
	rejected, msg, err := o.consume(req.Traces(), s)
	if err != nil {
		return none, err
	}
	return exportResponse(rejected, msg), nil
}

// writeOTLP writes a google.rpc.Status in the encoding ct.
func writeOTLP(w http.ResponseWriter, code int, ct string, st proto.Message) {
	var b []byte
	var err error
	if ct == otlpProtobuf {
		b, err = proto.Marshal(st)
	} else {
		b, err = protojson.Marshal(st)
	}
	if err != nil {
		ct, b = otlpJSON, []byte(`{"code":13,"message":"encode status"}`)
	}
	writeBody(w, code, ct, b)
}

func writeBody(w http.ResponseWriter, code int, ct string, b []byte) {
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
