package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrBufferFull is returned by Batcher.Add when the calls cannot be taken:
// the memory queue is full and there is no spool, or the spool is full
// (ErrSpoolFull wraps it). The HTTP layer answers 503 with Retry-After and
// nothing of the request is accepted.
var ErrBufferFull = errors.New("ingest queue full")

// BatchConfig sizes the Batcher.
type BatchConfig struct {
	BatchSize  int           // flush when this many calls are queued (-batch-size)
	FlushEvery time.Duration // flush at least this often (-flush-every)
	// FlushIdle flushes early when no call was added for this long and at
	// least a tenth of a batch is queued (-flush-idle): the end of a burst
	// is stored at once instead of waiting for FlushEvery. 0 disables it.
	FlushIdle     time.Duration
	QueueCapacity int           // calls held in memory at most, in-flight inserts included (-queue-capacity)
	MaxBackoff    time.Duration // cap of the retry backoff after a failed insert
	Inserts       int           // INSERTs in flight at once (-inserts); 0 means 1
}

// Inserter is where batches go: *Writer in production. With
// BatchConfig.Inserts > 1 its methods are called concurrently.
type Inserter interface {
	WriteBatch(ctx context.Context, calls *Batch) error
	WriteDeadLetters(ctx context.Context, dls []DeadLetter) error
}

// Batcher queues accepted calls and inserts them in batches of BatchSize or
// every FlushEvery, whichever comes first (or after FlushIdle without new
// calls when a tenth of a batch waits), with up to Inserts INSERTs in
// flight: while ClickHouse writes one batch, the next is encoded and sent.
// Only Run starts work; Add never blocks on ClickHouse.
//
// The memory queue holds calls encoded, in the spool's record format (about
// 600 bytes a call, and nothing the garbage collector has to scan), not as
// Call values (about 1.5 KB and 25 pointers each); a batch reaches the
// Inserter so (Batch), and is decoded one block at a time.
//
// Without a spool the queue is memory only: when it is full, Add pushes
// back with ErrBufferFull. With a spool (NewSpooledBatcher) Add first
// appends the calls to it, so an accepted call survives a crash; calls that
// do not fit in memory stay on disk and are read back in order as the
// memory queue drains, so memory stays bounded while the spool absorbs a
// ClickHouse outage; Add pushes back only when the spool is full.
//
// A failed insert is retried with capped exponential backoff and jitter
// while its calls stay queued, as long as the error is retryable (network,
// timeouts, an overloaded server; see Retryable). Calls that ClickHouse
// refuses for good go to the dead_letters table with the reason. Batches
// may reach ClickHouse out of order when Inserts > 1; the spool is
// committed only up to the oldest batch not yet inserted.
type Batcher struct {
	ins Inserter
	sp  *Spool
	cfg BatchConfig
	m   *Metrics
	log *slog.Logger

	commitMu sync.Mutex // held by commit
	mu       sync.Mutex
	segs     []seg // queued calls, not yet taken, oldest first
	nq       int   // calls in segs
	dead     []DeadLetter
	inMem    int          // calls in memory: queued plus taken and not yet inserted
	open     []*job       // taken batches not yet inserted, oldest first
	retry    []*job       // of those, the ones whose insert was cut short by shutdown: taken again first
	taken    counts       // calls and dead letters ever taken into batches
	marks    []mark       // spool records in memory, in order, for Commit
	loaded   SpoolPos     // spool records before this are in memory or inserted
	queued   counts       // calls and dead letters ever put in memory
	done     counts       // of those, inserted (or dead-lettered), oldest first without a gap
	lastAdd  atomic.Int64 // unix nanoseconds of the last Add that queued calls
	perCall  atomic.Int64 // bytes per call of the last record encoded, to size the next
	// beforeRead, when set, runs in load between taking the position to
	// read from and reading (tests of the race with Add).
	beforeRead func()
	wake       chan struct{}
	flushed    chan struct{} // closed and replaced after each successful flush
	logged     time.Time     // last push-back log line
}

type counts struct{ calls, dead uint64 }

// mark is the end of one spool record and the queued counts after it: the
// record is in ClickHouse once done reaches both.
type mark struct {
	end SpoolPos
	at  counts
}

// job is one batch taken from the queue: its calls, its dead letters, and
// the taken counts after it, which done reaches once it and every older job
// are inserted.
type job struct {
	calls    *Batch
	dead     []DeadLetter
	n        int // calls taken
	end      counts
	inserted bool
}

// NewBatcher returns a Batcher with a memory queue only, inserting through
// ins.
func NewBatcher(ins Inserter, cfg BatchConfig, m *Metrics, log *slog.Logger) *Batcher {
	return NewSpooledBatcher(ins, nil, cfg, m, log)
}

// NewSpooledBatcher returns a Batcher that appends every accepted call to
// sp before taking it (sp may be nil: memory only). Calls a previous process
// left in sp are inserted first. The Batcher owns sp's read side; close sp
// after Drain returns.
func NewSpooledBatcher(ins Inserter, sp *Spool, cfg BatchConfig, m *Metrics, log *slog.Logger) *Batcher {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 10000
	}
	if cfg.FlushEvery <= 0 {
		cfg.FlushEvery = time.Second
	}
	if cfg.QueueCapacity < cfg.BatchSize {
		cfg.QueueCapacity = 10 * cfg.BatchSize
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	if cfg.Inserts <= 0 {
		cfg.Inserts = 1
	}
	m.queueCapacity.Set(float64(cfg.QueueCapacity))
	b := &Batcher{ins: ins, sp: sp, cfg: cfg, m: m, log: log, wake: make(chan struct{}, 1), flushed: make(chan struct{})}
	if sp != nil {
		b.loaded = sp.Committed()
	}
	return b
}

// Add queues calls and dead letters as one unit: all of them or none. With
// a spool it appends them to the spool first and, under -spool-fsync=always,
// returns only after they are on stable storage; it fails with ErrSpoolFull
// (or an I/O error) and takes nothing when they cannot be written. Without
// a spool it fails with ErrBufferFull when the memory queue lacks room.
// Dead letters of a refused request are still kept in memory: they are few
// and bounded by the request size limits. Add is safe for concurrent use.
// The Batcher keeps copies of the Call values; the caller may reuse calls.
// Add is Enqueue followed by Sync.
func (b *Batcher) Add(calls []Call, dead []DeadLetter) error {
	r, err := b.Enqueue(calls, dead)
	if err != nil {
		return err
	}
	return b.Sync(r)
}

// Receipt names what one Enqueue wrote to the spool: the end of its record
// and its calls. The zero Receipt needs no fsync.
type Receipt struct {
	end   SpoolPos
	calls int
}

// Later returns the receipt that covers both r and q: Sync of it makes the
// records of both durable.
func (r Receipt) Later(q Receipt) Receipt {
	if r.end.before(q.end) {
		r.end = q.end
	}
	r.calls += q.calls
	return r
}

// Enqueue is Add without the fsync: the calls are queued (and appended to
// the spool, not necessarily on stable storage yet) when it returns nil, and
// Sync with its receipt makes them durable. A caller that must not hold a
// lock across an fsync enqueues under the lock and syncs after it. The
// errors and the all-or-nothing rule are Add's.
func (b *Batcher) Enqueue(calls []Call, dead []DeadLetter) (Receipt, error) {
	if b.sp == nil {
		return Receipt{}, b.addMemory(calls, dead)
	}
	if len(calls) == 0 && len(dead) == 0 {
		return Receipt{}, nil
	}
	// The record goes after room for its header, which appendFramed fills;
	// the queue keeps the payload behind it.
	rec, offs := b.encode(recordHeader, calls, dead)
	payload := rec[recordHeader:]
	b.mu.Lock()
	prev, end, err := b.sp.appendFramed(rec)
	if err != nil {
		b.enqueue(nil, nil, dead)
		b.mu.Unlock()
		reason := "spool_error"
		switch {
		case errors.Is(err, errDiskFull):
			reason = "disk_full"
		case errors.Is(err, ErrSpoolFull):
			reason = "spool_full"
		}
		b.m.dropped.WithLabelValues(reason).Add(float64(len(calls)))
		b.logPushBack(reason, err)
		return Receipt{}, err
	}
	spilled := false
	// The queue takes the record when every record before it is in memory
	// or inserted (prev: across a segment rotation too) and it fits.
	if b.loaded == prev && b.inMem+len(calls) <= b.cfg.QueueCapacity {
		b.enqueue(payload, offs, dead)
		b.marks = append(b.marks, mark{end: end, at: b.queued})
		b.loaded = end
	} else {
		spilled = true
	}
	n, ready := b.inMem, b.nq
	b.mu.Unlock()
	b.lastAdd.Store(time.Now().UnixNano())
	b.m.queued.Set(float64(n))
	if spilled {
		b.m.spilled.Add(float64(len(calls)))
	}
	if ready >= b.cfg.BatchSize || len(dead) > 0 || spilled {
		b.poke()
	}
	return Receipt{end: end, calls: len(calls)}, nil
}

// Sync returns once the records r names are on stable storage under
// -spool-fsync=always (at once under the other policies, or without a
// spool). Concurrent Syncs share one fsync. When the fsync fails the calls
// stay queued and will be inserted, but the sender must be told that they
// are not safe: its resend is harmless.
func (b *Batcher) Sync(r Receipt) error {
	if b.sp == nil || b.sp.cfg.Fsync != FsyncAlways || r == (Receipt{}) {
		return nil
	}
	if err := b.sp.Sync(r.end); err != nil {
		b.m.dropped.WithLabelValues("spool_error").Add(float64(r.calls))
		return err
	}
	return nil
}

func (b *Batcher) addMemory(calls []Call, dead []DeadLetter) error {
	var payload []byte
	var offs []uint32
	if len(calls) > 0 {
		payload, offs = b.encode(0, calls, nil)
	}
	b.mu.Lock()
	if b.inMem+len(calls) > b.cfg.QueueCapacity {
		b.enqueue(nil, nil, dead)
		b.mu.Unlock()
		b.m.dropped.WithLabelValues("buffer_full").Add(float64(len(calls)))
		b.logPushBack("buffer_full", nil)
		return fmt.Errorf("%w (capacity %d calls): retry later, or raise -queue-capacity", ErrBufferFull, b.cfg.QueueCapacity)
	}
	b.enqueue(payload, offs, dead)
	n, ready := b.inMem, b.nq
	b.mu.Unlock()
	b.lastAdd.Store(time.Now().UnixNano())
	b.m.queued.Set(float64(n))
	if ready >= b.cfg.BatchSize || len(dead) > 0 {
		b.poke()
	}
	return nil
}

// logPushBack logs that receivers refuse calls, at most every 10 s; the
// counters have every occurrence.
func (b *Batcher) logPushBack(reason string, err error) {
	b.mu.Lock()
	due := time.Since(b.logged) >= 10*time.Second
	if due {
		b.logged = time.Now()
	}
	b.mu.Unlock()
	if due {
		b.log.Warn("receivers are refusing calls (503); see mcplens_ingest_calls_dropped_total", "reason", reason, "err", err)
	}
}

// encode returns head zero bytes followed by the record of calls and dead,
// and the offset of each call in the record. The buffer is sized from the
// bytes per call of the record encoded before, so that it is usually
// neither grown nor much larger than the record; when the guess was far
// off (calls much smaller than the last request's), the record is copied
// into a buffer of its size, since the queue keeps it whole.
func (b *Batcher) encode(head int, calls []Call, dead []DeadLetter) ([]byte, []uint32) {
	per := min(max(b.perCall.Load(), 64), 1<<12)
	size := head + 64 + len(calls)*int(per)*9/8 + len(dead)*(MaxDeadLetterPayload/4)
	offs := make([]uint32, 0, len(calls))
	rec := appendRecord(make([]byte, head, size), calls, dead, &offs)
	if len(calls) > 0 && len(dead) == 0 {
		b.perCall.Store(int64((len(rec) - head + len(calls) - 1) / len(calls)))
	}
	if cap(rec)-len(rec) > len(rec)/4+4096 {
		rec = append(make([]byte, 0, len(rec)), rec...)
	}
	return rec, offs
}

// enqueue appends the calls of the record payload p, which start at offs
// (the queue owns both from now on), and dead to the memory queue; mu must
// be held.
func (b *Batcher) enqueue(p []byte, offs []uint32, dead []DeadLetter) {
	n := len(offs)
	if n > 0 {
		b.segs = append(b.segs, seg{p: p, offs: offs, to: n})
	}
	b.nq += n
	b.dead = append(b.dead, dead...)
	b.inMem += n
	b.queued.calls += uint64(n)
	b.queued.dead += uint64(len(dead))
}

func (b *Batcher) poke() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// hasRoom reports whether Add can take n more calls without ErrBufferFull
// for lack of memory: always with a spool (the spool's own limit is checked
// by Add), else when the memory queue has room.
func (b *Batcher) hasRoom(n int) bool {
	return b.sp != nil || b.Queued()+n <= b.cfg.QueueCapacity
}

// Queued returns the number of calls in memory not yet inserted, those of
// inserts in flight included. With a spool, more may wait on disk
// (mcplens_ingest_spool_bytes).
func (b *Batcher) Queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inMem
}

// Run inserts batches until ctx is done, with up to Inserts INSERTs in
// flight. It returns nil on cancellation, once the inserts in flight have
// ended; the caller then calls Drain with a fresh deadline to flush what is
// left. Under -spool-fsync=interval it also fsyncs the spool on that
// interval.
func (b *Batcher) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	if b.sp != nil && b.sp.cfg.Fsync == FsyncInterval {
		wg.Add(1)
		go func() { defer wg.Done(); b.syncEvery(ctx) }()
	}
	slots := make(chan struct{}, b.cfg.Inserts)
	t := time.NewTicker(b.cfg.FlushEvery)
	defer t.Stop()
	var idle <-chan time.Time
	if b.cfg.FlushIdle > 0 {
		it := time.NewTicker(max(b.cfg.FlushIdle/2, time.Millisecond))
		defer it.Stop()
		idle = it.C
	}
	force := false
	for {
		// Start a batch in each free slot while one is ready. Only this
		// goroutine fills slots, so a free slot stays free until used.
		for len(slots) < cap(slots) && ctx.Err() == nil && b.launch(ctx, force, slots, &wg, b.poke) {
			force = false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			force = true
		case <-idle:
			force = force || b.idle()
		case <-b.wake:
		}
	}
}

// idle reports whether the senders paused for FlushIdle with at least a
// tenth of a batch queued.
func (b *Batcher) idle() bool {
	if time.Since(time.Unix(0, b.lastAdd.Load())) < b.cfg.FlushIdle {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.nq > 0 && b.nq >= b.cfg.BatchSize/10
}

func (b *Batcher) syncEvery(ctx context.Context) {
	t := time.NewTicker(b.sp.cfg.FsyncEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := b.sp.syncDue(); err != nil {
				b.log.Error("spool fsync failed", "err", err)
			}
		}
	}
}

// Drain flushes everything queued, in memory and in the spool, retrying
// failed inserts until ctx ends. It gets its own deadline because the
// serving context is already cancelled when shutdown starts. With a spool,
// what could not be inserted by the deadline stays in the spool for the
// next start and Drain returns nil; without one, those calls are lost,
// counted, and Drain returns an error. Call it after Run has returned.
func (b *Batcher) Drain(ctx context.Context) error {
	for b.pending() {
		before := b.doneCount()
		b.flushAll(ctx)
		if err := ctx.Err(); err != nil {
			if b.sp != nil {
				b.log.Warn("drain deadline passed; calls left in the spool for the next start",
					"in_memory", b.Queued(), "spool_bytes", b.sp.Bytes())
				return nil
			}
			b.m.dropped.WithLabelValues("shutdown_timeout").Add(float64(b.Queued()))
			return fmt.Errorf("drain: %d calls not inserted: %w", b.Queued(), err)
		}
		if b.doneCount() == before {
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	b.commit()
	return nil
}

// flushAll inserts every batch that can be taken now, Inserts at a time,
// and returns when they have ended.
func (b *Batcher) flushAll(ctx context.Context) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, b.cfg.Inserts)
	for ctx.Err() == nil && b.launch(ctx, true, slots, &wg, func() {}) {
	}
	wg.Wait()
}

// launch takes the next batch (with force, whatever its size), waits for a
// free slot and inserts the batch in a goroutine that frees the slot and
// calls after when done. It reports false when no batch was ready.
func (b *Batcher) launch(ctx context.Context, force bool, slots chan struct{}, wg *sync.WaitGroup, after func()) bool {
	j := b.next(force)
	if j == nil {
		return false
	}
	slots <- struct{}{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		b.run(ctx, j)
		<-slots
		after()
	}()
	return true
}

// pending reports whether calls or dead letters wait in memory or on disk.
func (b *Batcher) pending() bool {
	b.mu.Lock()
	busy := b.inMem > 0 || len(b.dead) > 0 || len(b.retry) > 0
	loaded := b.loaded
	b.mu.Unlock()
	return busy || b.sp != nil && loaded.before(b.sp.Head())
}

func (b *Batcher) doneCount() counts {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.done
}

// WaitFlushed blocks until the next successful flush or ctx ends; tests and
// the replay command use it to know when accepted calls are queryable.
func (b *Batcher) WaitFlushed(ctx context.Context) error {
	b.mu.Lock()
	ch := b.flushed
	b.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flushOnce takes one batch, whatever its size, and inserts it; it reports
// whether another full batch (or spilled calls) is ready at once. Tests use
// it to step the Batcher without Run.
func (b *Batcher) flushOnce(ctx context.Context) bool {
	j := b.next(true)
	if j == nil {
		return false
	}
	b.run(ctx, j)
	b.mu.Lock()
	left, loaded := b.nq, b.loaded
	b.mu.Unlock()
	return left >= b.cfg.BatchSize || b.sp != nil && loaded.before(b.sp.Head())
}

// next reads spilled calls back from the spool while memory has room and
// takes the next batch: a batch cut short by shutdown first, else up to
// BatchSize queued calls with every queued dead letter. Without force it
// takes nothing smaller than BatchSize, unless dead letters wait or
// spilled calls wait on disk (a backlog: insert what is there).
func (b *Batcher) next(force bool) *job {
	if err := b.load(); err != nil {
		b.log.Error("spool read failed", "err", err)
	}
	backlog := false
	if b.sp != nil {
		head := b.sp.Head()
		b.mu.Lock()
		backlog = b.loaded.before(head)
		b.mu.Unlock()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.retry) > 0 {
		j := b.retry[0]
		b.retry = b.retry[1:]
		return j
	}
	n := min(b.nq, b.cfg.BatchSize)
	if n == 0 && len(b.dead) == 0 || n < b.cfg.BatchSize && len(b.dead) == 0 && !force && !backlog {
		return nil
	}
	j := &job{calls: &Batch{n: n}, dead: b.dead, n: n}
	for want := n; want > 0; {
		s := &b.segs[0]
		k := min(s.to-s.from, want)
		j.calls.segs = append(j.calls.segs, seg{p: s.p, offs: s.offs, from: s.from, to: s.from + k})
		want -= k
		if s.from += k; s.from == s.to {
			b.segs[0] = seg{}
			b.segs = b.segs[1:]
		}
	}
	b.nq -= n
	b.dead = nil
	b.taken.calls += uint64(n)
	b.taken.dead += uint64(len(j.dead))
	j.end = b.taken
	b.open = append(b.open, j)
	return j
}

// run inserts j's dead letters and calls. When ctx ends first, j goes back
// to the front of the queue (retry) with whatever it still holds.
func (b *Batcher) run(ctx context.Context, j *job) {
	if len(j.dead) > 0 {
		if !b.insertDead(ctx, j.dead) {
			b.requeue(j)
			return
		}
		j.dead = nil
	}
	if j.n > 0 && !b.insertCalls(ctx, j.calls) {
		b.requeue(j)
		return
	}
	b.finish(j)
	b.commit()
}

// requeue puts a batch cut short by shutdown back, before every batch
// taken after it.
func (b *Batcher) requeue(j *job) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := 0
	for i < len(b.retry) && b.retry[i].end.calls+b.retry[i].end.dead < j.end.calls+j.end.dead {
		i++
	}
	b.retry = append(b.retry[:i], append([]*job{j}, b.retry[i:]...)...)
}

// finish records that j is in ClickHouse and moves done over every
// inserted batch that no older batch holds back.
func (b *Batcher) finish(j *job) {
	b.mu.Lock()
	j.inserted = true
	b.inMem -= j.n
	j.calls = nil // the records can go once no other batch or run views them
	i := 0
	for i < len(b.open) && b.open[i].inserted {
		b.done = b.open[i].end
		i++
	}
	b.open = b.open[i:]
	close(b.flushed)
	b.flushed = make(chan struct{})
	n := b.inMem
	b.mu.Unlock()
	b.m.queued.Set(float64(n))
}

// load moves spilled records from the spool into the memory queue, in
// order, while there is room. A record larger than the whole queue is
// loaded alone into an empty queue, so that it cannot stall the spool.
func (b *Batcher) load() error {
	if b.sp == nil {
		return nil
	}
	b.mu.Lock()
	from, room, empty := b.loaded, b.cfg.QueueCapacity-b.inMem, b.inMem == 0
	b.mu.Unlock()
	if b.beforeRead != nil {
		b.beforeRead()
	}
	limit := b.sp.Head()
	if !from.before(limit) || room <= 0 && !empty {
		return nil
	}
	type rec struct {
		end  SpoolPos
		p    []byte
		offs []uint32
		dead []DeadLetter
	}
	var recs []rec
	read := 0
	next, err := b.sp.Read(from, limit, func(p []byte, end SpoolPos) bool {
		nc, err := recordCalls(p)
		if err == nil && nc > room && !(empty && len(recs) == 0) {
			return false
		}
		offs, dead, err := checkRecord(p)
		r := rec{end: end}
		if err != nil {
			// The checksum held, so this is a record of another version
			// or a bug: count it and move on rather than stall.
			b.m.spoolErrors.WithLabelValues("corrupt").Inc()
			b.m.dropped.WithLabelValues("spool_corrupt").Inc()
			b.log.Error("spool: undecodable record skipped", "end", end, "err", err)
		} else {
			// p is the spool's read buffer: the queue gets a copy.
			r.p, r.offs, r.dead = append([]byte(nil), p...), offs, dead
		}
		recs = append(recs, r)
		room -= len(r.offs)
		read += len(r.offs)
		return true
	})
	b.mu.Lock()
	for _, r := range recs {
		if !b.loaded.before(r.end) {
			// Add took this record into memory while it was read: when
			// nothing waited on disk, Add queues directly.
			continue
		}
		b.enqueue(r.p, r.offs, r.dead)
		b.marks = append(b.marks, mark{end: r.end, at: b.queued})
	}
	if b.loaded.before(next) {
		b.loaded = next
		b.marks = append(b.marks, mark{end: next, at: b.queued})
	}
	b.mu.Unlock()
	b.m.replayed.Add(float64(read))
	return err
}

// commit tells the spool how far ClickHouse holds everything. Commits are
// serialised so that the spool's checkpoint never moves back.
func (b *Batcher) commit() {
	if b.sp == nil {
		return
	}
	b.commitMu.Lock()
	defer b.commitMu.Unlock()
	b.mu.Lock()
	i := 0
	for i < len(b.marks) && b.marks[i].at.calls <= b.done.calls && b.marks[i].at.dead <= b.done.dead {
		i++
	}
	if i == 0 {
		b.mu.Unlock()
		return
	}
	pos := b.marks[i-1].end
	b.marks = append([]mark(nil), b.marks[i:]...)
	b.mu.Unlock()
	if err := b.sp.Commit(pos); err != nil {
		b.log.Warn("spool commit failed; the next start replays more", "err", err)
	}
}

// insertCalls inserts batch, retrying retryable errors until ctx ends. Rows
// that ClickHouse refuses for good are written to dead_letters instead. It
// reports false when ctx ended first.
func (b *Batcher) insertCalls(ctx context.Context, batch *Batch) bool {
	for batch.Len() > 0 {
		// An INSERT that has started is not cut short by shutdown: the
		// server may keep the blocks it already has, and a batch is cheaper
		// to finish than to send again (-clickhouse-read-timeout bounds it).
		ok, err := b.attempt(ctx, "calls", func(ctx context.Context) error { return b.ins.WriteBatch(context.WithoutCancel(ctx), batch) })
		if !ok {
			return false
		}
		if err == nil {
			return true
		}
		var row *RowError
		if errors.As(err, &row) && row.Index >= 0 && row.Index < batch.Len() {
			if !b.insertDead(ctx, []DeadLetter{rejectedAt(batch, row.Index, err)}) {
				return false
			}
			b.m.deadLettered.WithLabelValues("bad_row").Inc()
			batch = batch.without(row.Index)
			continue
		}
		dls := make([]DeadLetter, 0, batch.Len())
		batch.each(func(c *Call, derr error) { dls = append(dls, rejected(c, derr, err)) })
		b.log.Error("clickhouse refused a batch for good; its calls go to dead_letters", "calls", batch.Len(), "err", err)
		if !b.insertDead(ctx, dls) {
			return false
		}
		b.m.deadLettered.WithLabelValues("server_rejected").Add(float64(batch.Len()))
		return true
	}
	return true
}

// insertDead inserts dead letters, retrying retryable errors until ctx
// ends; dead letters refused for good are counted and logged. It reports
// false when ctx ended first.
func (b *Batcher) insertDead(ctx context.Context, dls []DeadLetter) bool {
	ok, err := b.attempt(ctx, "dead_letters", func(ctx context.Context) error { return b.ins.WriteDeadLetters(ctx, dls) })
	if ok && err != nil {
		b.m.dropped.WithLabelValues("dead_letter_failed").Add(float64(len(dls)))
		b.log.Error("clickhouse refused dead letters for good; they are lost", "rows", len(dls), "err", err)
	}
	return ok
}

// attempt runs insert until it succeeds or fails for good (err), with
// capped exponential backoff and jitter between retryable failures; done is
// false when ctx ended first.
func (b *Batcher) attempt(ctx context.Context, table string, insert func(context.Context) error) (done bool, err error) {
	backoff := 100 * time.Millisecond
	for {
		err := insert(ctx)
		if err == nil {
			return true, nil
		}
		b.m.insertErrors.WithLabelValues(table).Inc()
		b.m.insertFails.WithLabelValues(table, errorKind(err)).Inc()
		if !Retryable(err) {
			return true, err
		}
		b.log.Warn("insert failed; retrying", "table", table, "backoff", backoff, "err", err)
		sleep := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(sleep):
		}
		backoff = min(2*backoff, b.cfg.MaxBackoff)
	}
}

// rejectedAt is the dead letter of call i of batch, refused with err. A
// call that does not decode (its record is damaged: no encoder of this
// process writes such a record, and spool loads check theirs) still gets
// one, with the decode error, so that no call is lost without a trace.
func rejectedAt(batch *Batch, i int, err error) DeadLetter {
	c, derr := batch.At(i)
	return rejected(&c, derr, err)
}

// rejected is rejectedAt for a call already decoded (c, or the error derr
// of decoding it).
func rejected(c *Call, derr, err error) DeadLetter {
	if derr != nil {
		reason := fmt.Sprintf("queued call undecodable (%v) after: %v", derr, err)
		return DeadLetter{Received: time.Now().UTC(), Reason: reason[:utf8Cut([]byte(reason), 1024)]}
	}
	return rejectedCall(c, err)
}

// rejectedCall is the dead letter of a call ClickHouse refused: the call as
// JSON, so that it can be inspected and re-ingested after the fix.
func rejectedCall(c *Call, err error) DeadLetter {
	payload, jerr := json.Marshal(c)
	if jerr != nil {
		payload = []byte(fmt.Sprintf("%+v", *c))
	}
	reason := "insert refused by clickhouse: " + err.Error()
	// The call's strings view a queued record: the dead letter gets copies.
	return DeadLetter{Received: time.Now().UTC(), Tenant: strings.Clone(c.Tenant), Source: strings.Clone(c.Source), Reason: reason[:utf8Cut([]byte(reason), 1024)],
		Payload: string(payload[:utf8Cut(payload, MaxDeadLetterPayload)])}
}
