package pipeline

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// The pair log makes the spans the pairer holds durable (docs/otel.md, "One
// call, two spans"). A span held for its other side was acknowledged to its
// exporter but is not a row yet; without the log a crash lost it. The log
// is a Spool of its own, in <spool-dir>/pairs/<receiver>, with the spool's
// fsync policy, and its records say what each admit round and each release
// did to the held spans:
//
//   - hold: a span is held (or a held span's facts changed, an inner span
//     folded in), with its sequence number, its due time, its index keys
//     and its facts;
//   - merge: a held span met its other side; the record carries the merged
//     row, and is appended before that row is queued, so that a crash
//     between the two replays the merged row rather than the held span
//     alone (whose row has another identity: the call would count twice);
//   - resolve: a held span was stored alone (after its row was queued and
//     made durable) or given up (its row could not be built);
//   - undo: the record before it is void, its rows refused by the queue;
//   - keep: written once, by a clean shutdown (OTLP.ClosePairLog): a row
//     the pairer remembers for a late other side, with its facts, keys,
//     identity and when it is forgotten.
//
// On start (OTLP.OpenPairLog) the log from its checkpoint is read: the
// rows of merges are queued again (a copy of a stored row has its identity
// and version, which FINAL and the merges fold), the spans still held are
// held again until their due time, and the rows a clean shutdown
// remembered are remembered again until theirs, so that a restart (a
// deploy) does not store a second row for a call whose other side, or
// copy, arrives after it. The checkpoint follows the oldest span still
// held, after the main spool is durable up to the rows queued before it;
// remembered rows do not hold it back (a crash after the start forgets
// them, as before).
//
// A record's payload is the version byte, its kind (pairOps or pairUndo)
// and, for pairOps, a uvarint count of operations, each an op byte, the
// held span's sequence number (uvarint), and for a hold its due time (unix
// ms, varint), its keys (a uvarint count, 24 bytes each) and its facts
// (appendFacts); for a merge the row (appendCall, as a spool record of
// recordVersion); for a keep (sequence number 0) the time it is forgotten
// (unix ms, varint), a byte 1 when the row has both sides, its keys and
// facts as a hold's, and its row's identity (appendIdentity).

const (
	pairLogVersion byte = 1

	pairOps  byte = 1
	pairUndo byte = 2

	opHold    byte = 1
	opMerge   byte = 2
	opResolve byte = 3
	opKeep    byte = 4

	// pairLogSegmentBytes keeps the log's segments small: a segment is
	// deleted once the checkpoint passes it, and the spans held span a
	// pair window of traffic.
	pairLogSegmentBytes = 4 << 20
)

var errBadPairRecord = errors.New("malformed pair log record")

// pairOp is one operation of a pair log record.
type pairOp struct {
	op     byte
	seq    uint64
	due    int64 // hold, keep: unix ms
	keys   []linkKey
	f      *spanFacts // hold, keep
	row    *Call      // merge
	id     *identity  // keep
	merged bool       // keep
}

// pairLog is the pairer's log; the pairer's lock guards it.
type pairLog struct {
	sp  *Spool
	seq uint64 // the last sequence number given
	buf []byte
	// replayed are the merged rows the start recovered that the queue has
	// not taken yet (the spool was full): queued by the next releases,
	// and the checkpoint stays where it is until they are.
	replayed []Call
}

// queueReplayed queues the recovered merged rows still waiting, and
// reports whether none is left.
func (o *OTLP) queueReplayed(l *pairLog) bool {
	if len(l.replayed) == 0 {
		return true
	}
	r, err := o.batcher.Enqueue(l.replayed, nil)
	if err == nil {
		err = o.batcher.Sync(r)
	}
	if err != nil {
		return false
	}
	l.replayed = nil
	return true
}

// next returns a new sequence number.
func (l *pairLog) next() uint64 {
	l.seq++
	return l.seq
}

// append writes ops as one record and returns where it starts and ends.
func (l *pairLog) append(ops []pairOp) (start, end SpoolPos, err error) {
	b := append(l.buf[:0], 0, 0, 0, 0, 0, 0, 0, 0) // the header's place (appendFramed)
	b = append(b, pairLogVersion, pairOps)
	b = binary.AppendUvarint(b, uint64(len(ops)))
	for i := range ops {
		b = appendPairOp(b, &ops[i])
	}
	start, end, err = l.sp.appendFramed(b)
	if cap(b) <= 4<<20 { // a request of 1,000 held spans and merges writes about 2 MB
		l.buf = b[:0]
	}
	if err != nil {
		return start, end, fmt.Errorf("pair log: %w", err)
	}
	return start, end, nil
}

// undo voids the record just appended: the queue refused its rows.
func (l *pairLog) undo() error {
	if _, _, err := l.sp.Append([]byte{pairLogVersion, pairUndo}); err != nil {
		return fmt.Errorf("pair log: %w", err)
	}
	return nil
}

// sync makes the log durable up to end under -spool-fsync=always.
func (l *pairLog) sync(end SpoolPos) error {
	if l == nil || l.sp.cfg.Fsync != FsyncAlways || end == (SpoolPos{}) {
		return nil
	}
	if err := l.sp.Sync(end); err != nil {
		return fmt.Errorf("pair log: %w", err)
	}
	return nil
}

func appendPairOp(b []byte, o *pairOp) []byte {
	b = append(b, o.op)
	b = binary.AppendUvarint(b, o.seq)
	switch o.op {
	case opHold:
		b = binary.AppendVarint(b, o.due)
		b = appendKeys(b, o.keys)
		b = appendFacts(b, o.f)
	case opKeep:
		b = binary.AppendVarint(b, o.due)
		var merged byte
		if o.merged {
			merged = 1
		}
		b = append(b, merged)
		b = appendKeys(b, o.keys)
		b = appendFacts(b, o.f)
		b = appendIdentity(b, o.id)
	case opMerge:
		b = appendCall(b, o.row)
	}
	return b
}

func appendKeys(b []byte, keys []linkKey) []byte {
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = append(b, k[:]...)
	}
	return b
}

// appendIdentity encodes id: its time, call id and version, then its
// tenant, server, tool and session key.
func appendIdentity(b []byte, id *identity) []byte {
	b = binary.AppendVarint(b, id.timeMs)
	b = binary.AppendUvarint(b, id.callID)
	b = binary.AppendVarint(b, id.ingestedMs)
	for _, s := range [...]string{id.tenant(), id.server(), id.tool(), id.sessionKey()} {
		b = appendStr(b, s)
	}
	return b
}

func (r *recordReader) identity() *identity {
	c := Call{TimeMs: r.varint(), CallID: r.uvarint(), IngestedMs: r.varint()}
	c.Tenant, c.Server, c.Tool, c.SessionKey = r.str(), r.str(), r.str(), r.str()
	id := identityOf(&c)
	return &id
}

// appendFacts encodes f field by field; readFacts decodes it. A test
// round-trips facts with every field set.
func appendFacts(b []byte, f *spanFacts) []byte {
	b = binary.AppendVarint(b, int64(f.index))
	b = append(b, f.trace[:]...)
	b = append(b, f.span[:]...)
	b = append(b, f.parent[:]...)
	var flags byte
	for i, v := range [...]bool{f.folded, f.tenantSet, f.serverSet, f.argsLossy, f.noResp, f.rpcErr} {
		if v {
			flags |= 1 << i
		}
	}
	b = append(b, flags, f.argsKind, f.info)
	b = binary.AppendVarint(b, f.timeMs)
	b = binary.AppendVarint(b, f.durMs)
	b = binary.AppendVarint(b, f.rpcCode)
	b = binary.AppendVarint(b, int64(f.isError))
	b = binary.AppendVarint(b, int64(f.blocks))
	b = appendStr(b, f.side)
	b = binary.AppendUvarint(b, uint64(len(f.links)))
	for _, l := range f.links {
		b = append(b, l[:]...)
	}
	for _, s := range f.strs() {
		b = appendStr(b, *s)
	}
	return appendStrs(b, f.texts)
}

// bytes reads n bytes, or fails.
func (r *recordReader) bytes(n int) []byte {
	if len(r.p) < n {
		r.fail()
		return make([]byte, n)
	}
	v := r.p[:n]
	r.p = r.p[n:]
	return v
}

// keys reads a uvarint count of link keys and the keys, 24 bytes each.
func (r *recordReader) keys() []linkKey {
	k := r.uvarint()
	if k > uint64(len(r.p))/24 {
		r.fail()
		return nil
	}
	if k == 0 {
		return nil
	}
	keys := make([]linkKey, k)
	for i := range keys {
		copy(keys[i][:], r.bytes(24))
	}
	return keys
}

func (r *recordReader) facts(f *spanFacts) {
	f.index = int(r.varint())
	copy(f.trace[:], r.bytes(16))
	copy(f.span[:], r.bytes(8))
	copy(f.parent[:], r.bytes(8))
	flags := r.byte()
	for i, v := range [...]*bool{&f.folded, &f.tenantSet, &f.serverSet, &f.argsLossy, &f.noResp, &f.rpcErr} {
		*v = flags&(1<<i) != 0
	}
	f.argsKind, f.info = r.byte(), r.byte()
	f.timeMs, f.durMs, f.rpcCode = r.varint(), r.varint(), r.varint()
	f.isError, f.blocks = int8(r.varint()), int32(r.varint())
	f.side = sideConst(r.str())
	n := r.uvarint()
	if n > uint64(len(r.p))/8 {
		r.fail()
		return
	}
	if n > 0 {
		f.links = make([]pcommon.SpanID, n)
		for i := range f.links {
			copy(f.links[i][:], r.bytes(8))
		}
	}
	for _, s := range f.strs() {
		*s = r.str()
	}
	f.texts = r.strs()
}

// sideConst returns the constant for side, so that a decoded side compares
// as the decoder's own do and costs no memory.
func sideConst(side string) string {
	for _, c := range [...]string{sideClient, sideServer, sideBoth} {
		if side == c {
			return c
		}
	}
	return side
}

// decodePairRecord decodes a pair log record payload. Its strings are
// copies.
func decodePairRecord(p []byte) (undo bool, ops []pairOp, err error) {
	if len(p) < 2 || p[0] != pairLogVersion {
		return false, nil, fmt.Errorf("%w: version %v", errBadPairRecord, p[:min(len(p), 1)])
	}
	switch p[1] {
	case pairUndo:
		if len(p) != 2 {
			return false, nil, fmt.Errorf("%w: %d bytes after an undo", errBadPairRecord, len(p)-2)
		}
		return true, nil, nil
	case pairOps:
	default:
		return false, nil, fmt.Errorf("%w: kind %d", errBadPairRecord, p[1])
	}
	r := &recordReader{p: p[2:], version: recordVersion}
	n := r.uvarint()
	if n > uint64(len(r.p))/2 {
		return false, nil, fmt.Errorf("%w: %d operations in %d bytes", errBadPairRecord, n, len(r.p))
	}
	ops = make([]pairOp, 0, n)
	for range n {
		o := pairOp{op: r.byte(), seq: r.uvarint()}
		switch o.op {
		case opHold:
			o.due = r.varint()
			o.keys = r.keys()
			o.f = &spanFacts{}
			r.facts(o.f)
		case opKeep:
			if o.seq != 0 {
				return false, nil, fmt.Errorf("%w: a keep with sequence number %d", errBadPairRecord, o.seq)
			}
			o.due = r.varint()
			switch r.byte() {
			case 0:
			case 1:
				o.merged = true
			default:
				r.fail()
			}
			o.keys = r.keys()
			o.f = &spanFacts{}
			r.facts(o.f)
			o.id = r.identity()
		case opMerge:
			o.row = &Call{}
			r.call(o.row)
		case opResolve:
		default:
			return false, nil, fmt.Errorf("%w: operation %d", errBadPairRecord, o.op)
		}
		if r.err != nil {
			break
		}
		ops = append(ops, o)
	}
	if r.err == nil && len(r.p) != 0 {
		r.err = fmt.Errorf("%w: %d trailing bytes", errBadPairRecord, len(r.p))
	}
	if r.err != nil {
		return false, nil, fmt.Errorf("pair log: %w", r.err)
	}
	return false, ops, nil
}

// recoveredHold is a span the log says is held, or was, after a replay.
type recoveredHold struct {
	seq        uint64
	due        int64
	keys       []linkKey
	f          *spanFacts
	start, end SpoolPos // of its first and latest hold records
	row        *Call    // a merge's row
	done       bool     // merged, stored alone or given up
}

// replayPairLog reads sp from its checkpoint and returns what its records
// left: the rows of merges, in log order, the rows a clean shutdown
// remembered (the latest keep of each span, in log order), the spans
// still held, in the
// order of their first hold records (of two holds of one span, a request
// and its exporter's retry whose first answer was an error, the later),
// and the last sequence number used. That is the order of the pairer's
// held queue, whose first entry's record the checkpoint may not pass: in
// the order of their due times, a hold logged earlier with a later due
// time (a request whose clock read later) came after one logged later, and
// the checkpoint passed it (TestOTLPHeldSpansSurviveACrash).
func replayPairLog(sp *Spool) (rows []Call, kept []pairOp, held []*recoveredHold, last uint64, err error) {
	bySeq := map[uint64]*recoveredHold{}
	var order []*recoveredHold
	type record struct {
		ops        []pairOp
		start, end SpoolPos
	}
	var pending *record // the last record, void if an undo follows
	apply := func(rec *record) {
		begin := func(seq uint64) *recoveredHold {
			h := &recoveredHold{seq: seq, start: rec.start}
			bySeq[seq] = h
			order = append(order, h)
			return h
		}
		for i := range rec.ops {
			o := &rec.ops[i]
			last = max(last, o.seq)
			h := bySeq[o.seq]
			switch o.op {
			case opHold:
				if h == nil || h.done {
					h = begin(o.seq)
				}
				h.due, h.keys, h.f, h.end = o.due, o.keys, o.f, rec.end
			case opMerge:
				if h == nil {
					h = begin(o.seq)
				}
				h.row, h.done = o.row, true
			case opResolve:
				if h != nil {
					h.done = true
				}
			case opKeep:
				kept = append(kept, *o)
			}
		}
	}
	pos := sp.Committed()
	_, err = sp.Read(pos, sp.Head(), func(p []byte, end SpoolPos) bool {
		start := pos
		pos = end
		undo, ops, err := decodePairRecord(p)
		if err != nil {
			// Whole (its checksum holds) but not a record this build
			// writes: skipped, as the spool skips what it cannot read.
			sp.log.Error("pair log: a record this build cannot read; skipping it", "dir", sp.dir, "end", end, "err", err)
			sp.m.spoolErrors.WithLabelValues("corrupt").Inc()
			return true
		}
		if undo {
			pending = nil
			return true
		}
		if pending != nil {
			apply(pending)
		}
		pending = &record{ops: ops, start: start, end: end}
		return true
	})
	if err != nil {
		return nil, nil, nil, 0, err
	}
	if pending != nil {
		apply(pending)
	}
	// Two keeps of one span (a second clean shutdown before the checkpoint
	// passed the first's record): the later.
	latestKeep := map[[24]byte]int{}
	for i := range kept {
		latestKeep[makeLinkKey(kept[i].f.trace, kept[i].f.span)] = i
	}
	n := 0
	for i := range kept {
		if latestKeep[makeLinkKey(kept[i].f.trace, kept[i].f.span)] == i {
			kept[n] = kept[i]
			n++
		}
	}
	kept = kept[:n]
	latest := map[[24]byte]*recoveredHold{}
	for _, h := range order {
		if h.row != nil {
			rows = append(rows, *h.row)
		}
		if h.done {
			continue
		}
		k := makeLinkKey(h.f.trace, h.f.span)
		if prev := latest[k]; prev != nil {
			prev.done = true
		}
		latest[k] = h
	}
	for _, h := range order {
		if !h.done {
			held = append(held, h)
		}
	}
	return rows, kept, held, last, nil
}

// pairLogsDir is the directory of the receivers' pair logs in the spool's.
func pairLogsDir(spoolDir string) string { return filepath.Join(spoolDir, "pairs") }

// pairLogDir is where the receiver named name keeps its pair log.
func pairLogDir(spoolDir, name string) string {
	return filepath.Join(pairLogsDir(spoolDir), name)
}

// OpenPairLog opens the log of the spans this receiver holds, in the
// directory pairs/name of its Batcher's spool, and recovers what a crash
// left in it: the rows of merges are queued again (by the releases that
// follow when the spool has no room now) and the spans still held are held
// again, until their due time (a span whose time passed while the process
// was down is stored alone at the first release). Without a spool
// there is nothing to open. Call it before serving; ClosePairLog closes it.
func (o *OTLP) OpenPairLog(name string) error {
	b := o.batcher
	if b.sp == nil {
		return nil
	}
	cfg := b.sp.cfg
	cfg.Dir = pairLogDir(cfg.Dir, name)
	cfg.SegmentBytes = min(cfg.MaxBytes/8, pairLogSegmentBytes)
	sp, err := openSpool(cfg, o.m, o.log, true)
	if err != nil {
		return fmt.Errorf("pair log: %w", err)
	}
	rows, kept, held, last, err := replayPairLog(sp)
	if err != nil {
		sp.Close()
		return fmt.Errorf("pair log %s: %w", cfg.Dir, err)
	}
	l := &pairLog{sp: sp, seq: last, replayed: rows}
	if !o.queueReplayed(l) {
		// Failing the start here would keep ingest from draining the
		// spool that has no room for them.
		o.log.Warn("pair log: the spool has no room for the merged rows recovered; they are queued once it has",
			"dir", cfg.Dir, "rows", len(rows))
	}
	p := o.pair
	p.mu.Lock()
	defer p.mu.Unlock()
	now := o.now()
	remembered := 0
	for i := range kept {
		k := &kept[i]
		if !time.UnixMilli(k.due).After(now) {
			continue // its memory passed while the process was down
		}
		e := &pairEntry{p: pack(k.f), merged: k.merged}
		p.register(e, k.keys)
		p.keep(e, *k.id, now)
		e.due = time.UnixMilli(k.due) // before any row kept from now on: the queue stays in due order
		remembered++
	}
	p.trim(now)
	for _, h := range held {
		e := p.holdUntil(pack(h.f), h.keys, time.UnixMilli(h.due))
		e.seq, e.logStart, e.logEnd = h.seq, h.start, h.end
	}
	p.log = l
	p.observe()
	o.m.pairRecovered.WithLabelValues("held").Add(float64(len(held)))
	o.m.pairRecovered.WithLabelValues("merged").Add(float64(len(rows)))
	o.m.pairRecovered.WithLabelValues("remembered").Add(float64(remembered))
	if len(held) > 0 || len(rows) > 0 || remembered > 0 {
		o.log.Info("pair log recovered", "dir", cfg.Dir, "held", len(held), "merged_rows", len(rows), "remembered", remembered)
	}
	return o.commitPairLog()
}

// commitPairLog moves the log's checkpoint to the oldest span still held
// (to its head when none is), once the main spool is durable up to the
// merged rows queued before it, and once the merged rows recovered at the
// start are queued. p.mu is held, or the log not yet shared.
func (o *OTLP) commitPairLog() error {
	p := o.pair
	l := p.log
	if l == nil {
		return nil
	}
	defer func() { o.m.pairLogBytes.Set(float64(l.sp.Bytes())) }()
	if len(l.replayed) > 0 {
		return nil // their merge records stay until release queues them
	}
	to := l.sp.Head()
	for _, e := range p.held {
		if e.state == entryHeld {
			to = e.logStart
			break
		}
	}
	if !l.sp.Committed().before(to) {
		return nil
	}
	if b := o.batcher.sp; b.cfg.Fsync == FsyncAlways {
		if err := b.Sync(b.Head()); err != nil {
			return err
		}
	}
	if err := l.sp.Commit(to); err != nil {
		return fmt.Errorf("pair log: %w", err)
	}
	return nil
}

// ClosePairLog closes the pair log. It first writes the rows the pairer
// remembers (after Flush, the spans it held too, stored alone) in one
// record, for the next OpenPairLog to remember again. When the log then
// holds nothing, its directory is removed; otherwise the next OpenPairLog
// recovers what it holds.
func (o *OTLP) ClosePairLog() error {
	p := o.pair
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.log
	if l == nil {
		return nil
	}
	err := o.commitPairLog()
	if err == nil {
		o.logKept(l)
	}
	empty := err == nil && p.nHeld == 0 && l.sp.Committed() == l.sp.Head()
	err = errors.Join(err, l.sp.Close())
	p.log = nil
	if empty && err == nil {
		if rerr := os.RemoveAll(l.sp.dir); rerr != nil {
			o.log.Warn("pair log: remove its empty directory", "dir", l.sp.dir, "err", rerr)
		}
	}
	return err
}

// logKept writes the rows the pairer remembers to l, in records of up to
// keepsPerRecord, made durable under -spool-fsync=always. A failure is
// logged, not returned: the next start then remembers nothing, as after
// a crash, and stores a second row for a call whose other side arrives
// after it. p.mu is held.
func (o *OTLP) logKept(l *pairLog) {
	p := o.pair
	ops := make([]pairOp, 0, min(p.nKept, keepsPerRecord))
	facts := make([]spanFacts, 0, cap(ops))
	var err error
	flush := func() {
		if len(ops) == 0 || err != nil {
			return
		}
		var end SpoolPos
		if _, end, err = l.append(ops); err == nil {
			err = l.sync(end)
		}
		ops, facts = ops[:0], facts[:0]
	}
	n, now := 0, o.now()
	for _, e := range p.kept {
		// A row whose fsync failed is not remembered: its sender was told
		// so, and its retry stores the row again.
		if e.state != entryKept || e.unsafe || !e.due.After(now) {
			continue
		}
		facts = append(facts, e.p.unpack())
		ops = append(ops, pairOp{op: opKeep, due: e.due.UnixMilli(), keys: e.keys, f: &facts[len(facts)-1], id: &e.id, merged: e.merged})
		n++
		if len(ops) == keepsPerRecord {
			flush()
		}
	}
	flush()
	o.m.pairLogBytes.Set(float64(l.sp.Bytes()))
	if err != nil {
		o.log.Warn("pair log: the rows remembered for a late other side not written; the next start forgets them", "dir", l.sp.dir, "rows", n, "err", err)
	}
}

// keepsPerRecord bounds a keep record: about 3 MB of remembered rows.
const keepsPerRecord = 1000
