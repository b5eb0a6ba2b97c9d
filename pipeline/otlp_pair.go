package pipeline

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// One call can arrive as several spans (docs/otel.md, "One call, two
// spans"):
//
//   - an inner span of the same side: mcp-go's tool.{name} under
//     mcp.tools/call, or an MCP client span under a GenAI execute_tool span.
//     It is folded into the outer span.
//   - a client span and the server span whose parent it is: the server
//     extracts the client's context from params._meta. The two merge into
//     one row with side "both": the server's view of the outcome and the
//     client's start time, duration and local failure (a timeout).
//
// pairInRequest does both within one export request. The pairer does the
// second across requests.

// linkKey is a trace id and the span id of a client-side span.
type linkKey [24]byte

func makeLinkKey(t pcommon.TraceID, s pcommon.SpanID) (k linkKey) {
	copy(k[:16], t[:])
	copy(k[16:], s[:])
	return k
}

// pairKeys returns the keys under which f can meet the rest of its call:
// for a client-side call, or one whose two sides met in its request, its
// client span ids (a server span's parent) and its parent span id (an
// outer span of the same call, such as a GenAI execute_tool span); for a
// server-side call its parent span id; none otherwise. A call merged in
// its request is remembered as any other: a copy of one of its sides sent
// later alone (an exporter's retry of the client's request, after a
// collector had batched the two sides together) is the same call, and a
// row stored earlier for one side is replaced by the merged row.
func (f *spanFacts) pairKeys() []linkKey {
	switch f.side {
	case sideClient, sideBoth:
		keys := make([]linkKey, 0, len(f.links)+1)
		for _, id := range f.links {
			keys = append(keys, makeLinkKey(f.trace, id))
		}
		if !f.parent.IsEmpty() {
			keys = append(keys, makeLinkKey(f.trace, f.parent))
		}
		return keys
	case sideServer:
		if !f.parent.IsEmpty() && !f.trace.IsEmpty() {
			return []linkKey{makeLinkKey(f.trace, f.parent)}
		}
	}
	return nil
}

// pairInRequest folds inner spans into their outer span and merges client
// and server spans of the same call, following parent span ids within
// facts. A span that appears again in facts (the same trace and span id)
// is one call, as a copy in a later request is: its later copies are
// dropped (among servers' root spans only, the copies build the same row,
// which FINAL and the queries count once). It returns the calls
// left, in span order. idx is where it indexes the spans, empty and reused
// across requests (nil makes one); it is left empty.
func pairInRequest(facts []spanFacts, idx map[linkKey]int) []spanFacts {
	if len(facts) < 2 || !anyLinkable(facts) {
		return facts // nothing to follow or meet: root spans of servers only
	}
	if idx == nil {
		idx = make(map[linkKey]int, len(facts))
	} else {
		defer clear(idx)
	}
	into := make([]int, len(facts)) // where a merged call went; -1 while alive
	for i := range facts {
		into[i] = -1
		f := &facts[i]
		k := makeLinkKey(f.trace, f.span)
		if j, ok := idx[k]; ok && !f.span.IsEmpty() && !f.trace.IsEmpty() {
			// The same span twice in one request (an exporter that
			// batched a retry with new spans). Left in, one copy merged
			// with its other side and the other was stored alone: the
			// call counted more than once (FuzzOTLPPairer).
			into[i] = j
			continue
		}
		idx[k] = i
	}
	find := func(j int) int {
		for into[j] >= 0 {
			j = into[j]
		}
		return j
	}
	// The side each span had before a merge made its call's row both: an
	// inner span hangs from one side of a merged call, which its parent's
	// own side says, whatever the order of the spans in the request.
	sides := make([]string, len(facts))
	for i := range facts {
		sides[i] = facts[i].side
	}
	for i := range facts {
		f := &facts[i]
		if f.parent.IsEmpty() || into[i] >= 0 {
			continue
		}
		j, ok := idx[makeLinkKey(f.trace, f.parent)]
		if !ok {
			continue
		}
		direct := sides[j]
		j = find(j)
		if j == i {
			continue
		}
		p := &facts[j]
		outer := p.side // the side f would hang from
		if outer == sideBoth && f.side != sideBoth {
			outer = direct
		}
		switch {
		case f.side == sideServer && (p.side == sideClient):
			*p = mergePair(*p, *f)
		case sameSide(outer, f.side) && p.tool == f.tool:
			*p = fold(*p, *f)
		default:
			// A server's handler calling another tool, or unrelated spans:
			// separate calls.
			continue
		}
		into[i] = j
	}
	out := facts[:0]
	for i := range facts {
		if into[i] < 0 {
			out = append(out, facts[i])
		}
	}
	return out
}

// anyLinkable reports whether a span of facts has a parent span id or is
// a client's: one that the pairer may hold or merge, so that a second copy
// of it in the request must be dropped here (a held copy merged with its
// server side and the other released alone were two rows of one call).
func anyLinkable(facts []spanFacts) bool {
	for i := range facts {
		if !facts[i].parent.IsEmpty() || facts[i].side == sideClient {
			return true
		}
	}
	return false
}

// sameSide reports whether an inner span of side inner can be part of the
// same call as its outer span of side outer.
func sameSide(outer, inner string) bool {
	switch outer {
	case sideServer:
		return inner == sideServer || inner == ""
	case sideClient, "":
		return inner == sideClient || inner == "" || inner == sideBoth
	}
	return false
}

// mergePair merges the client and server spans of one call: identity and
// outcome from the server, time and duration from the client, and the
// client's view when it got no answer.
func mergePair(c, s spanFacts) spanFacts {
	m := s
	m.side = sideBoth
	m.index = min(c.index, s.index)
	m.span, m.parent = c.span, c.parent
	m.links = append(append([]pcommon.SpanID(nil), c.links...), s.links...)
	m.timeMs = c.timeMs
	if c.durMs >= 0 {
		m.durMs = c.durMs
	}
	if !s.tenantSet && c.tenantSet {
		m.tenant, m.tenantSet = c.tenant, true
	}
	if !s.serverSet {
		m.server = c.server
	}
	m.tool = firstOf(s.tool, c.tool)
	m.session = firstOf(s.session, c.session)
	m.conv = firstOf(s.conv, c.conv)
	m.proto = firstOf(s.proto, c.proto)
	m.reqID = firstOf(s.reqID, c.reqID)
	m.client = firstOf(c.client, s.client)
	if s.argsKind == argsUnknown || s.argsKind == argsHashed && c.argsKind == argsJSON {
		m.args, m.argsKind = c.args, c.argsKind
	}
	if c.noResp || s.info == 0 && c.info > 0 {
		m.takeOutcome(&c)
	}
	return m
}

// fold merges an inner span into the outer span of the same call and side.
func fold(o, n spanFacts) spanFacts {
	m := o
	m.folded = true
	if o.side == "" || n.side == sideBoth {
		m.side = n.side
	}
	m.links = append(append([]pcommon.SpanID(nil), o.links...), n.links...)
	if m.durMs < 0 {
		m.durMs = n.durMs
	}
	if !o.tenantSet && n.tenantSet {
		m.tenant, m.tenantSet = n.tenant, true
	}
	if !o.serverSet && n.serverSet || o.server == defaultServer {
		m.server, m.serverSet = n.server, n.serverSet
	}
	m.session = firstOf(o.session, n.session)
	m.conv = firstOf(o.conv, n.conv)
	m.proto = firstOf(o.proto, n.proto)
	m.reqID = firstOf(o.reqID, n.reqID)
	m.client = firstOf(o.client, n.client)
	if o.argsKind == argsUnknown || o.argsKind == argsHashed && n.argsKind == argsJSON {
		m.args, m.argsKind = n.args, n.argsKind
	}
	if n.info > o.info || n.info == o.info && n.side == sideBoth {
		m.takeOutcome(&n)
	}
	return m
}

// nests reports whether client-side calls a and b are an outer span and
// an inner span of the same call, and returns them in that order.
func nests(a, b *spanFacts) (outer, inner *spanFacts, ok bool) {
	if a.tool != b.tool || a.trace != b.trace || (a.side != sideClient && a.side != sideBoth) || (b.side != sideClient && b.side != sideBoth) {
		return nil, nil, false
	}
	switch {
	case !b.parent.IsEmpty() && slices.Contains(a.links, b.parent):
		return a, b, true
	case !a.parent.IsEmpty() && slices.Contains(b.links, a.parent):
		return b, a, true
	}
	return nil, nil, false
}

func (m *spanFacts) takeOutcome(src *spanFacts) {
	m.info, m.noResp, m.localErr = src.info, src.noResp, src.localErr
	m.rpcErr, m.rpcCode, m.rpcMsg = src.rpcErr, src.rpcCode, src.rpcMsg
	m.result, m.isError, m.texts, m.blocks = src.result, src.isError, src.texts, src.blocks
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// identity is what a stored row is found by: its sort key in the calls
// table, plus its version. Its strings lie one after another in buf.
type identity struct {
	timeMs     int64
	callID     uint64
	ingestedMs int64
	buf        string
	ends       [3]uint32 // of tenant, server and tool in buf; the session key is the rest
}

func (id *identity) tenant() string     { return id.buf[:id.ends[0]] }
func (id *identity) server() string     { return id.buf[id.ends[0]:id.ends[1]] }
func (id *identity) tool() string       { return id.buf[id.ends[1]:id.ends[2]] }
func (id *identity) sessionKey() string { return id.buf[id.ends[2]:] }

// detach copies id's strings into a buffer of their own: the facts' buffer
// it shared (packFacts) is being replaced.
func (id *identity) detach() {
	id.buf = strings.Clone(id.buf)
}

// identityOf returns the identity of c's row. Its strings are copies in one
// allocation: c's strings share one buffer with its arguments and message,
// which a remembered identity would otherwise keep alive.
func identityOf(c *Call) identity {
	a, b, d := len(c.Tenant), len(c.Tenant)+len(c.Server), len(c.Tenant)+len(c.Server)+len(c.Tool)
	return identity{timeMs: c.TimeMs, callID: c.CallID, ingestedMs: c.IngestedMs,
		buf: strings.Join([]string{c.Tenant, c.Server, c.Tool, c.SessionKey}, ""), ends: [3]uint32{uint32(a), uint32(b), uint32(d)}}
}

// packedFacts is a spanFacts as the pairer keeps it, in few pointers and
// few bytes: its strings lie one after another in buf, found by their
// ends, and its texts view buf. The pairer's entries live for minutes and
// every garbage collection marks them: an entry holding a spanFacts was
// over 500 bytes with about twenty pointers, and at
// -otlp-pair-max-bytes=64MiB marking them took a linked span about a
// sixth of its ingest CPU (BENCHMARKS.md). Packing copies the strings
// once, so that what the pairer keeps no longer views a request body.
type packedFacts struct {
	sc    spanScalars
	side  string // one of a few constants
	links []pcommon.SpanID
	texts []string
	buf   string
	ends  [packedStrings]uint32
}

// packedStrings is the number of strings strs returns.
const packedStrings = 13

// strs returns f's strings but side, which is one of a few constants, and
// texts.
func (f *spanFacts) strs() [packedStrings]*string {
	return [...]*string{&f.name, &f.tenant, &f.server, &f.tool, &f.session, &f.conv, &f.client,
		&f.proto, &f.reqID, &f.args, &f.localErr, &f.rpcMsg, &f.result}
}

// packFacts copies f's strings into one string: one allocation for them
// and one for the texts' slice. With row (the row f made), it also returns
// row's identity, its strings copied into the same string after f's: one
// allocation less for every span stored alone, and the identity no longer
// than the facts it is kept with.
func packFacts(f *spanFacts, row *Call) (packedFacts, identity) {
	p := packedFacts{sc: f.spanScalars, side: f.side, links: f.links}
	strs := f.strs()
	n := 0
	for _, s := range strs {
		n += len(*s)
	}
	for _, t := range f.texts {
		n += len(t)
	}
	var idStrs [4]string
	if row != nil {
		idStrs = [4]string{row.Tenant, row.Server, row.Tool, row.SessionKey}
		for _, s := range idStrs {
			n += len(s)
		}
	}
	var b strings.Builder // its buffer is not zeroed first
	b.Grow(n)
	for i, s := range strs {
		b.WriteString(*s)
		p.ends[i] = uint32(b.Len())
	}
	for _, t := range f.texts {
		b.WriteString(t)
	}
	var id identity
	at := b.Len()
	if row != nil {
		id = identity{timeMs: row.TimeMs, callID: row.CallID, ingestedMs: row.IngestedMs}
		for i, s := range idStrs[:3] {
			b.WriteString(s)
			id.ends[i] = uint32(b.Len() - at)
		}
		b.WriteString(idStrs[3])
	}
	p.buf = b.String()
	if row != nil {
		id.buf = p.buf[at:]
		p.buf = p.buf[:at]
	}
	if len(f.texts) > 0 {
		at := int(p.ends[packedStrings-1])
		p.texts = make([]string, len(f.texts))
		for i, t := range f.texts {
			p.texts[i] = p.buf[at : at+len(t)]
			at += len(t)
		}
	}
	return p, id
}

// pack is packFacts without a row.
func pack(f *spanFacts) packedFacts {
	p, _ := packFacts(f, nil)
	return p
}

// unpack returns the facts; their strings view p's buffer.
func (p *packedFacts) unpack() spanFacts {
	f := spanFacts{spanScalars: p.sc, side: p.side, links: p.links, texts: p.texts}
	at := uint32(0)
	for i, s := range f.strs() {
		*s = p.buf[at:p.ends[i]]
		at = p.ends[i]
	}
	return f
}

// Pair entry states.
const (
	entryNew  uint8 = iota // built, not yet held or kept
	entryHeld              // waiting for the other side; not yet a row
	entryKept              // emitted; identity remembered for a late other side
	entryGone
)

type pairEntry struct {
	p      packedFacts
	keys   []linkKey
	due    time.Time // held: when it is emitted alone; kept: when it is forgotten
	state  uint8
	merged bool // both sides are in the row
	id     identity
	size   int64 // footprint counted in pairer.bytes while held or kept
	// end is where the spool record holding the entry's latest row ends
	// (zero without a spool, and while held): a request that finds its
	// span already stored (an exporter retry) is answered only once that
	// record is durable. unsafe is set when the fsync of that record
	// failed: the sender was told so, and its retry stores the row again
	// instead of being taken as a duplicate.
	end    SpoolPos
	unsafe bool
	// seq names a held entry in the pair log; logStart is where its first
	// hold record starts (the log's checkpoint stays before it while it is
	// held) and logEnd where its latest ends (durable before a request
	// relying on the hold is answered).
	seq              uint64
	logStart, logEnd SpoolPos
}

// entryOverhead is the memory of a pair entry besides the strings of its
// facts: the entry, its index keys and map slots, and the identity.
const entryOverhead = 640

// footprint estimates the heap bytes e holds: its facts' strings and a
// fixed overhead. The byte budget of the pairer is counted in these.
func (e *pairEntry) footprint() int64 {
	return int64(entryOverhead + len(e.p.buf) + 16*len(e.p.texts) + 8*len(e.p.links) + 32*len(e.keys) + len(e.id.buf))
}

// pairer holds linkable spans across export requests. A held span waits
// up to the pair window for its other side; an emitted one is remembered
// for pairMemory so that a late other side replaces its row (same sort
// key, later version) instead of adding one. Both queues are FIFO in due
// order because the window and the memory are fixed. The receiver's
// methods lock mu around every use.
//
// Memory is bounded twice: at most capacity entries held and capacity
// remembered, and at most maxBytes (footprint) in all. A span is not held
// when the held entries alone would pass maxBytes (it is stored at once,
// as when capacity is reached), and the oldest remembered rows are
// forgotten while the total is over it. Remembered rows carry their
// arguments and result, a few KB each: without the byte bound the default
// capacity alone could hold half a gigabyte and starve the collector.
type pairer struct {
	mu        sync.Mutex
	window    time.Duration
	capacity  int
	maxBytes  int64
	idx       map[uint64]*pairEntry // by slot of each key of an entry
	seed      [3]uint64
	held      []*pairEntry
	kept      []*pairEntry
	nHeld     int
	nKept     int
	bytes     int64  // footprint of held and kept entries
	heldBytes int64  // of those, held
	gen       uint64 // counts registers: an index that gained no key finds no new entry
	m         pairMetrics
	log       *pairLog // nil without a spool (OTLP.OpenPairLog)
}

func newPairer(window time.Duration, capacity int, maxBytes int64, m *Metrics) *pairer {
	return &pairer{window: window, capacity: capacity, maxBytes: maxBytes, idx: map[uint64]*pairEntry{},
		seed: [3]uint64{rand.Uint64(), rand.Uint64(), rand.Uint64()}, m: m.pair()}
}

// slot is where the index holds k: a 64-bit mix of its trace and span ids
// under the pairer's random seed. A map of 8-byte keys probes and compares
// in half the memory of one of 24-byte keys, and the pairer looks up every
// linkable span's keys, most of them absent. find checks the entry's own
// keys, so two keys in one slot never relate the wrong spans; the second
// registered takes the slot, and the first entry is then no longer found
// under that key (a pairing missed, with odds of about one in 2^64 per
// pair of live keys, and not forced from outside without the seed).
func (p *pairer) slot(k linkKey) uint64 {
	a := binary.LittleEndian.Uint64(k[0:8]) ^ p.seed[0]
	b := binary.LittleEndian.Uint64(k[8:16]) ^ p.seed[1]
	c := binary.LittleEndian.Uint64(k[16:24]) ^ p.seed[2]
	h := a*slotMul0 ^ bits.RotateLeft64(b*slotMul1, slotRot1) ^ bits.RotateLeft64(c*slotMul2, slotRot2)
	return h ^ h>>32
}

// The odd multipliers of slot's three words, and the rotations of the
// second and third.
const (
	slotMul0 = 0x9E3779B97F4A7C15
	slotMul1 = 0xC2B2AE3D27D4EB4F
	slotMul2 = 0x165667B19E3779F9
	slotRot1 = 29
	slotRot2 = 47
)

// observe sets the pairer's gauges; callers hold mu.
func (p *pairer) observe() {
	p.m.held.Set(float64(p.nHeld))
	p.m.kept.Set(float64(p.nKept))
	p.m.bytes.Set(float64(p.bytes))
}

// forgetKept forgets the remembered row e, counts it on reason (the
// counter of age, capacity or bytes) and sets the reach to how long it had
// been remembered.
func (p *pairer) forgetKept(e *pairEntry, reason prometheus.Counter, now time.Time) {
	if e.state == entryKept {
		reason.Inc()
		p.m.reach.Set(min(pairMemory, max(0, pairMemory-e.due.Sub(now))).Seconds())
	}
	p.forget(e)
}

// canHold reports whether f may be held as well as the extra bytes already
// promised to other holds of the same request.
func (p *pairer) canHold(f *packedFacts, keys []linkKey, promised int64) (int64, bool) {
	e := pairEntry{p: *f, keys: keys}
	n := e.footprint()
	return n, p.heldBytes+promised+n <= p.maxBytes
}

// account sets e's footprint after its facts or state changed.
func (p *pairer) account(e *pairEntry) {
	if e.state == entryGone {
		return
	}
	n := e.footprint()
	p.bytes += n - e.size
	if e.state == entryHeld {
		p.heldBytes += n - e.size
	}
	e.size = n
}

// Relations between a call in the pairer and a new span's call.
const (
	relNone uint8 = iota
	relSame       // the same span again (an exporter retry), or a side the row has
	relFold       // an outer and an inner span of one call
	relPair       // the client and the server span of one call
)

// relate says how f relates to the call held or kept in e.
func relate(e *pairEntry, f *spanFacts) uint8 {
	g := e.p.unpack()
	switch {
	case g.trace != f.trace:
		return relNone
	case g.span == f.span || slices.Contains(g.links, f.span):
		if f.side == sideBoth && !e.merged && g.side != sideBoth {
			return relPair // the row has the client side, f both: f replaces it
		}
		return relSame
	}
	if _, _, ok := nests(&g, f); ok {
		return relFold
	}
	if f.side == sideServer && g.side != sideServer && slices.Contains(g.links, f.parent) ||
		g.side == sideServer && f.side != sideServer && slices.Contains(f.links, g.parent) {
		if e.merged {
			return relSame
		}
		return relPair
	}
	return relNone
}

// find returns the first live entry under keys that f relates to.
func (p *pairer) find(keys []linkKey, f *spanFacts) (*pairEntry, uint8) {
	for _, k := range keys {
		if e := p.idx[p.slot(k)]; e != nil && e.state != entryGone && slices.Contains(e.keys, k) {
			if r := relate(e, f); r != relNone {
				return e, r
			}
		}
	}
	return nil, relNone
}

// probe sets met on each of spans that meets an entry of the pairer now:
// its alone row would not be used if it still does when admit decides. It
// takes mu.
func (p *pairer) probe(spans []linkableSpan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range spans {
		e, _ := p.find(spans[i].keys, &spans[i].f)
		spans[i].met, spans[i].gen = e != nil, p.gen
	}
}

// register indexes e under keys, which it may keep: the caller does not
// change them after.
func (p *pairer) register(e *pairEntry, keys []linkKey) {
	for _, k := range keys {
		p.idx[p.slot(k)] = e
	}
	if e.keys == nil {
		e.keys = slices.Clip(keys) // a later register appends to a copy
	} else {
		e.keys = append(e.keys, keys...)
	}
	p.gen++
}

func (p *pairer) hold(f packedFacts, keys []linkKey, now time.Time) *pairEntry {
	return p.holdUntil(f, keys, now.Add(p.window))
}

// holdUntil holds f until due (a hold the pair log gave back keeps its own).
func (p *pairer) holdUntil(f packedFacts, keys []linkKey, due time.Time) *pairEntry {
	e := &pairEntry{p: f, due: due, state: entryHeld}
	p.register(e, keys)
	p.held = append(p.held, e)
	p.nHeld++
	p.account(e)
	return e
}

// keep remembers an emitted row; trim then forgets the oldest rows past
// capacity or past the byte budget.
func (p *pairer) keep(e *pairEntry, id identity, now time.Time) {
	if e.state == entryHeld {
		p.nHeld--
		p.heldBytes -= e.size
	}
	e.state, e.id, e.due = entryKept, id, now.Add(pairMemory)
	p.kept = append(p.kept, e)
	p.nKept++
	p.account(e)
}

// trim forgets the oldest remembered rows while there are more than
// capacity or the footprint is over maxBytes, and sets the gauges. Callers
// trim once they have applied every change of a request, so that no entry
// a request refers to is forgotten in the middle of it.
func (p *pairer) trim(now time.Time) {
	for (p.nKept > p.capacity || p.bytes > p.maxBytes) && len(p.kept) > 0 {
		reason := p.m.forgotBytes
		if p.nKept > p.capacity {
			reason = p.m.forgotCapacity
		}
		p.forgetKept(p.kept[0], reason, now)
		p.kept = popFront(p.kept)
	}
	p.observe()
}

func (p *pairer) forget(e *pairEntry) {
	if e.state == entryGone {
		return
	}
	switch e.state {
	case entryHeld:
		p.nHeld--
		p.heldBytes -= e.size
	case entryKept:
		p.nKept--
	}
	p.bytes -= e.size
	e.size = 0
	e.state = entryGone
	for _, k := range e.keys {
		if h := p.slot(k); p.idx[h] == e {
			delete(p.idx, h)
		}
	}
	// A request's vouch may still point at e: drop what e holds, so that
	// the facts of a forgotten row are garbage at once, as the byte budget
	// counts them.
	e.p, e.keys, e.id = packedFacts{}, nil, identity{}
}

// popFront removes the first entry of q, clearing its slot: the queue's
// backing array is not reallocated until it fills, and the entries left
// in the slots before the slice's start would otherwise stay reachable,
// and marked by every garbage collection, until then.
func popFront(q []*pairEntry) []*pairEntry {
	q[0] = nil
	return q[1:]
}

// expired returns the held entries due by now, oldest first, without
// removing them.
func (p *pairer) expired(now time.Time, all bool) []*pairEntry {
	var out []*pairEntry
	for _, e := range p.held {
		if e.state != entryHeld {
			continue
		}
		if !all && e.due.After(now) {
			break
		}
		out = append(out, e)
	}
	return out
}

// compact drops stale heads of both queues and forgets kept rows past
// their memory.
func (p *pairer) compact(now time.Time) {
	for len(p.held) > 0 && p.held[0].state != entryHeld {
		p.held = popFront(p.held)
	}
	for len(p.kept) > 0 {
		e := p.kept[0]
		if e.state == entryKept && e.due.After(now) {
			break
		}
		p.forgetKept(e, p.m.forgotAge, now)
		p.kept = popFront(p.kept)
	}
	p.observe()
	if cap(p.held) > 1024 && len(p.held) < cap(p.held)/4 {
		p.held = append([]*pairEntry(nil), p.held...)
	}
	if cap(p.kept) > 1024 && len(p.kept) < cap(p.kept)/4 {
		p.kept = append([]*pairEntry(nil), p.kept...)
	}
}

// counts returns the held and remembered entries.
func (p *pairer) counts() (held, kept int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nHeld, p.nKept
}
