package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
	"github.com/prometheus/client_golang/prometheus"
)

// FuzzSpooledBatcher drives a spooled Batcher one batch at a time (as Run
// does, through flushOnce) across process lifetimes: requests added, some
// with a dead letter and some with a call ClickHouse cannot convert;
// inserts that succeed, fail while ClickHouse is down (the insert is cut
// short by shutdown and its batch requeued) or are refused for good; spool
// writes and fsyncs that fail; crashes (the files closed with no drain and
// no checkpoint beyond the last commit, sometimes with a torn record at
// the end); power losses (what was not fsynced gone, and the checkpoint
// sometimes too); and shutdowns whose drain ends or runs out of time. The
// first byte picks the configuration; each pair of bytes after it is one
// step (see the switch).
//
// After every step the books must hold: the memory queue within its
// capacity (or one record alone), the spool's uncommitted bytes within
// -spool-max-bytes, its byte count equal to its files' sizes, its
// committed position not past its head. Within one lifetime ClickHouse
// must get each call once and in order (with one insert in flight). At the
// end, after a drain with ClickHouse up, every call and dead letter an Add
// took is in ClickHouse (calls in the calls table or, refused, in
// dead_letters), no call an Add refused is anywhere, the spool holds
// nothing to replay, and a drained and closed spool replays nothing.
func FuzzSpooledBatcher(f *testing.F) {
	// Seeds: adds and flushes with a spill to disk; an outage with a crash
	// and a torn record; a full spool and a full disk; a refused batch and
	// an unconvertible call; failed fsyncs and a shutdown during an outage
	// with small segments; power losses, one after a failed fsync and one
	// losing the checkpoint, with small segments.
	f.Add([]byte{0x00, 0, 3, 0, 4, 0, 3, 1, 0, 1, 0})
	f.Add([]byte{0x01, 0, 2, 2, 0, 0, 0x83, 4, 1, 0, 1, 1, 0})
	f.Add([]byte{0x0c, 0, 4, 0, 4, 0, 4, 6, 1, 0, 4, 6, 0, 0, 4, 1, 0, 0, 4})
	f.Add([]byte{0x02, 0, 0x43, 3, 0, 0, 0x44, 1, 0, 0, 0xc2, 1, 0})
	f.Add([]byte{0x16, 7, 0, 0, 3, 2, 0, 8, 1, 0, 4, 5, 0, 1, 0})
	f.Add([]byte{0x25, 0, 4, 0, 4, 0, 4, 2, 0, 5, 1, 0, 3, 4, 0, 1, 0})
	f.Add([]byte{0x04, 0, 3, 1, 0, 0, 4, 7, 0, 0, 2, 9, 1, 0, 4, 9, 0, 1, 0})
	// A record inserted and committed before its fsync (which failed), a
	// power loss, a request added and a crash: the stale checkpoint must
	// not skip that request (TestSpoolCheckpointPastAPowerLossIsRewritten).
	f.Add([]byte{0x00, 7, 0, 0, 3, 1, 0, 9, 0, 0, 4, 4, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 257 {
			return
		}
		h := newBatcherFuzz(t, data[0])
		defer func() { h.sp.closeFiles() }()
		for i := 1; i+1 < len(data); i += 2 {
			op, arg := data[i], data[i+1]
			switch op % 10 {
			case 0: // a request of arg%5 calls; bit 6: one cannot be converted; bit 7: a dead letter
				h.add(int(arg%5), arg&0x40 != 0, arg&0x80 != 0)
			case 1: // one batch with ClickHouse up
				h.flush(insUp)
			case 2: // one batch while ClickHouse is down: cut short by shutdown
				h.flush(insDown)
			case 3: // one batch that ClickHouse refuses for good
				h.flush(insRefuse)
			case 4: // a crash; arg&1: with a torn record at the end
				h.crash(arg&1 != 0)
			case 5: // a shutdown: drain (arg&1: while ClickHouse is down, past the deadline), close, start again
				if arg&1 != 0 {
					h.shutdown(insDown)
				} else {
					h.shutdown(insUp)
				}
			case 6: // the next spool write fails (arg&1: the disk is full, else a short write)
				h.failWrite, h.writeENOSPC = 1, arg&1 != 0
			case 7: // the next fsync fails
				h.failFsync = 1
			case 8: // the memory queue loads what waits on disk, no insert
				if err := h.b.load(); err != nil {
					t.Fatalf("load: %v", err)
				}
			case 9: // a power loss; arg&1: the checkpoint is lost too
				h.powerLoss(arg&1 != 0)
			}
			h.checkBooks()
		}
		h.failWrite, h.failFsync = 0, 0
		h.shutdown(insUp)
		if c, hd := h.sp.Committed(), h.sp.Head(); c != hd {
			t.Fatalf("after a drain with ClickHouse up and a restart: committed %v, head %v: the next start replays", c, hd)
		}
		h.setMode(insUp, func() {})
		if err := h.b.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		h.checkBooks()
		h.checkStored()
	})
}

// The modes of fuzzInserter.
const (
	insUp     = iota
	insDown   // fails with a network error and ends the step's context: a shutdown during an outage
	insRefuse // refuses every batch with a type mismatch; dead letters are taken
)

// fuzzInserter is ClickHouse for FuzzSpooledBatcher: a batch goes in whole
// or not at all, and a call whose Tool is "bad" cannot be converted.
type fuzzInserter struct {
	mu       sync.Mutex
	mode     int
	cancel   context.CancelFunc // ends the step's context, in insDown
	ordered  bool               // one insert in flight: calls must arrive in order
	last     int64              // id of the last call inserted in this lifetime
	problems []string           // broken rules, reported by the test goroutine
	calls    map[int64]int      // inserts of each call, over every lifetime
	dead     []DeadLetter
}

func (f *fuzzInserter) WriteBatch(_ context.Context, b *Batch) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch f.mode {
	case insDown:
		f.cancel()
		return &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}
	case insRefuse:
		return &proto.Exception{Code: 53, Message: "Type mismatch"}
	}
	calls, err := b.Calls()
	if err != nil {
		f.problems = append(f.problems, fmt.Sprintf("a queued batch does not decode: %v", err))
		return &RowError{Index: 0, Err: err}
	}
	for i := range calls {
		if calls[i].Tool == "bad" {
			return &RowError{Index: i, Err: errors.New("cannot convert")}
		}
	}
	for i := range calls {
		id := calls[i].TimeMs
		if f.ordered && id <= f.last {
			f.problems = append(f.problems, fmt.Sprintf("call %d inserted after call %d in the same lifetime", id, f.last))
		}
		f.last = id
		f.calls[id]++
	}
	return nil
}

func (f *fuzzInserter) WriteDeadLetters(_ context.Context, dls []DeadLetter) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mode == insDown {
		f.cancel()
		return &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}
	}
	f.dead = append(f.dead, dls...)
	return nil
}

// batcherFuzz is one FuzzSpooledBatcher run: the spool directory, the
// current lifetime's spool and Batcher, and what every Add was answered.
type batcherFuzz struct {
	t    *testing.T
	dir  string
	cfg  SpoolConfig
	bcfg BatchConfig
	sp   *Spool
	b    *Batcher
	ins  *fuzzInserter

	next        int64 // id of the next call
	failWrite   int   // spool writes still to fail
	writeENOSPC bool  // and how: the disk is full, else a short write
	failFsync   int   // fsyncs still to fail

	took      map[int64]bool // calls an Add took: must be stored
	unsafe    map[int64]bool // calls spooled whose fsync failed: may be stored
	refused   map[int64]bool // calls an Add refused: must not be stored
	deadTook  map[string]bool
	deadMaybe map[string]bool // dead letters of refused requests: kept in memory only
}

// newBatcherFuzz opens the first lifetime. In conf, bits 0-1 size the
// memory queue (3, 5, 8 or 40 calls, batches of 3), bit 2 makes segments
// small (rotations), bit 3 makes -spool-max-bytes tight, bit 4 fsyncs
// never instead of always, bit 5 runs two inserts at once in drains.
func newBatcherFuzz(t *testing.T, conf byte) *batcherFuzz {
	h := &batcherFuzz{t: t, dir: t.TempDir(),
		cfg:  SpoolConfig{Fsync: FsyncAlways, MaxBytes: 1 << 20, SegmentBytes: 1 << 16},
		bcfg: BatchConfig{BatchSize: 3, QueueCapacity: []int{3, 5, 8, 40}[conf&3]},
		ins:  &fuzzInserter{calls: map[int64]int{}},
		took: map[int64]bool{}, unsafe: map[int64]bool{}, refused: map[int64]bool{},
		deadTook: map[string]bool{}, deadMaybe: map[string]bool{}}
	if conf&4 != 0 {
		h.cfg.SegmentBytes = 300
	}
	if conf&8 != 0 {
		h.cfg.MaxBytes = 1200
	}
	if conf&16 != 0 {
		h.cfg.Fsync = FsyncNever
	}
	if conf&32 != 0 {
		h.bcfg.Inserts = 2
	}
	h.ins.ordered = h.bcfg.Inserts <= 1
	h.open()
	return h
}

// open starts a lifetime: the spool opened with the failure hooks, a new
// Batcher on it.
func (h *batcherFuzz) open() {
	h.t.Helper()
	m := NewMetrics(prometheus.NewRegistry())
	cfg := h.cfg
	cfg.Dir = h.dir
	sp, err := OpenSpool(cfg, m, quietLog())
	if err != nil {
		h.t.Fatalf("open the spool: %v", err)
	}
	sp.write = func(f *os.File, p []byte) (int, error) {
		if h.failWrite == 0 {
			return f.Write(p)
		}
		h.failWrite--
		n, _ := f.Write(p[:len(p)/2])
		if h.writeENOSPC {
			return n, syscall.ENOSPC
		}
		return n, nil
	}
	sp.fsync = func(f *os.File) error {
		if h.failFsync == 0 {
			return f.Sync()
		}
		h.failFsync--
		return errors.New("injected fsync failure")
	}
	h.sp = sp
	h.b = NewSpooledBatcher(h.ins, sp, h.bcfg, m, quietLog())
	h.ins.mu.Lock()
	h.ins.last = -1
	h.ins.mu.Unlock()
}

// add sends a request of n calls, one of them unconvertible when bad, with
// a dead letter when dead, and files its ids by the answer.
func (h *batcherFuzz) add(n int, bad, dead bool) {
	calls := make([]Call, n)
	ids := make([]int64, n)
	for i := range calls {
		ids[i] = h.next
		calls[i] = Call{TimeMs: h.next, Tool: "t", ArgsJSON: strings.Repeat("x", int(h.next%7)*10)}
		h.next++
	}
	if bad && n > 0 {
		calls[n-1].Tool = "bad"
	}
	var dls []DeadLetter
	reason := fmt.Sprintf("dead letter %d", h.next)
	if dead {
		dls = []DeadLetter{{Reason: reason, Payload: "{"}}
		h.next++
	}
	fsyncsBefore := h.failFsync
	r, err := h.b.Enqueue(calls, dls)
	switch {
	case err != nil:
		if !errors.Is(err, ErrSpoolFull) && !strings.Contains(err.Error(), "short write") {
			h.t.Fatalf("Enqueue: %v", err)
		}
		for _, id := range ids {
			h.refused[id] = true
		}
		if dead {
			h.deadMaybe[reason] = true
		}
		return
	case h.b.Sync(r) != nil:
		if h.failFsync == fsyncsBefore {
			h.t.Fatalf("Sync failed without an injected failure")
		}
		for _, id := range ids {
			h.unsafe[id] = true
		}
		if dead {
			h.deadMaybe[reason] = true
		}
		return
	}
	for _, id := range ids {
		h.took[id] = true
	}
	if dead {
		h.deadTook[reason] = true
	}
}

// flush inserts one batch, as Run does, with ClickHouse in mode.
func (h *batcherFuzz) flush(mode int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.setMode(mode, cancel)
	h.b.flushOnce(ctx)
	h.checkInserter()
}

func (h *batcherFuzz) setMode(mode int, cancel context.CancelFunc) {
	h.ins.mu.Lock()
	h.ins.mode, h.ins.cancel = mode, cancel
	h.ins.mu.Unlock()
}

// crash ends the lifetime as SIGKILL does: the files closed, no drain, no
// checkpoint beyond the last commit; torn adds the header of a record
// whose payload never arrived. The next lifetime starts at once.
func (h *batcherFuzz) crash(torn bool) {
	last := h.sp.segPath(h.sp.Head().Seg)
	h.sp.closeFiles()
	if torn {
		f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			h.t.Fatal(err)
		}
		if _, err := f.Write([]byte{200, 0, 0, 0, 1, 2}); err != nil {
			h.t.Fatal(err)
		}
		f.Close()
	}
	h.open()
}

// powerLoss ends the lifetime as a power loss does: what was appended
// since the spool's last fsync is gone (under -spool-fsync=always; under
// never an acknowledged call may go too, so it is a crash there), and with
// loseCheckpoint the checkpoint, written without an fsync, is gone too:
// the next start replays the spool from its first segment.
func (h *batcherFuzz) powerLoss(loseCheckpoint bool) {
	h.t.Helper()
	if h.cfg.Fsync != FsyncAlways {
		h.crash(false)
		return
	}
	losePower(h.t, h.sp)
	if loseCheckpoint {
		if err := os.Remove(filepath.Join(h.dir, checkpointName)); err != nil && !errors.Is(err, os.ErrNotExist) {
			h.t.Fatal(err)
		}
	}
	h.open()
}

// losePower closes sp's files as a power loss leaves them: what was
// appended since its last fsync is gone.
func losePower(t *testing.T, sp *Spool) {
	t.Helper()
	sp.syncMu.Lock()
	synced := sp.synced
	sp.syncMu.Unlock()
	head := sp.Head()
	sp.closeFiles()
	// Earlier segments were fsynced when the spool moved past them.
	var keep int64
	if synced.Seg == head.Seg {
		keep = synced.Off
	}
	if err := os.Truncate(sp.segPath(head.Seg), keep); err != nil {
		t.Fatal(err)
	}
}

// shutdown drains with ClickHouse in mode (insDown: the deadline passes
// during the outage), closes the spool and starts the next lifetime.
func (h *batcherFuzz) shutdown(mode int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.setMode(mode, cancel)
	if err := h.b.Drain(ctx); err != nil {
		h.t.Fatalf("drain: %v", err)
	}
	h.checkInserter()
	fsyncsBefore := h.failFsync
	if err := h.sp.Close(); err != nil && h.failFsync == fsyncsBefore {
		h.t.Fatalf("close: %v", err)
	}
	h.open()
}

func (h *batcherFuzz) checkInserter() {
	h.t.Helper()
	h.ins.mu.Lock()
	defer h.ins.mu.Unlock()
	if len(h.ins.problems) > 0 {
		h.t.Fatal(strings.Join(h.ins.problems, "; "))
	}
}

// checkBooks checks the Batcher's and the spool's counts against their
// queues and files.
func (h *batcherFuzz) checkBooks() {
	h.t.Helper()
	b, sp := h.b, h.sp
	b.mu.Lock()
	inMem, nq, segCalls := b.inMem, b.nq, 0
	for _, s := range b.segs {
		segCalls += s.to - s.from
	}
	openCalls := 0
	for _, j := range b.open {
		if !j.inserted {
			openCalls += j.n
		}
	}
	b.mu.Unlock()
	if nq != segCalls {
		h.t.Fatalf("nq %d, the queue's segments hold %d calls", nq, segCalls)
	}
	if inMem != nq+openCalls {
		h.t.Fatalf("inMem %d, queued %d plus taken and not inserted %d", inMem, nq, openCalls)
	}
	if inMem > max(h.bcfg.QueueCapacity, 4) {
		h.t.Fatalf("%d calls in memory, capacity %d", inMem, h.bcfg.QueueCapacity)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if p := sp.pendingLocked(); p > h.cfg.MaxBytes || p < 0 {
		h.t.Fatalf("%d bytes uncommitted, -spool-max-bytes %d", p, h.cfg.MaxBytes)
	}
	if sp.head.before(sp.committed) {
		h.t.Fatalf("committed %v past the head %v", sp.committed, sp.head)
	}
	files, err := filepath.Glob(filepath.Join(h.dir, "*"+segmentSuffix))
	if err != nil {
		h.t.Fatal(err)
	}
	var onDisk int64
	for _, name := range files {
		st, err := os.Stat(name)
		if err != nil {
			h.t.Fatal(err)
		}
		onDisk += st.Size()
	}
	if len(files) != len(sp.segs) || onDisk != sp.bytes {
		h.t.Fatalf("the spool counts %d segments and %d bytes; the directory has %d and %d", len(sp.segs), sp.bytes, len(files), onDisk)
	}
}

// checkStored checks, at the end, what ClickHouse holds against what every
// Add was answered.
func (h *batcherFuzz) checkStored() {
	h.t.Helper()
	h.checkInserter()
	stored := map[int64]bool{}
	for id := range h.ins.calls {
		stored[id] = true
	}
	deadSeen := map[string]bool{}
	for _, d := range h.ins.dead {
		if !strings.HasPrefix(d.Reason, "insert refused by clickhouse: ") {
			deadSeen[d.Reason] = true
			continue
		}
		var c Call
		if err := json.Unmarshal([]byte(d.Payload), &c); err != nil {
			h.t.Fatalf("dead letter of a refused call without the call: %v: %q", err, d.Payload)
		}
		stored[c.TimeMs] = true
	}
	for id := range stored {
		if !h.took[id] && !h.unsafe[id] {
			h.t.Fatalf("call %d stored; its Add was refused (%v) or never made", id, h.refused[id])
		}
	}
	for id := range h.took {
		if !stored[id] {
			h.t.Fatalf("call %d was taken by an Add and is not stored", id)
		}
	}
	for r := range deadSeen {
		if !h.deadTook[r] && !h.deadMaybe[r] {
			h.t.Fatalf("dead letter %q stored but never added", r)
		}
	}
	for r := range h.deadTook {
		if !deadSeen[r] {
			h.t.Fatalf("%s was taken by an Add and is not stored", r)
		}
	}
}
