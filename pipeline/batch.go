package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// ErrBufferFull is returned by Batcher.Add when the calls cannot be taken:
// the memory queue is full and there is no spool, or the spool is full
// (ErrSpoolFull wraps it). The HTTP layer answers 503 with Retry-After and
// nothing of the request is accepted.
var ErrBufferFull = errors.New("ingest queue full")

// BatchConfig sizes the Batcher.
type BatchConfig struct {
	BatchSize     int           // flush when this many calls are queued (-batch-size)
	FlushEvery    time.Duration // flush at least this often (-flush-every)
	QueueCapacity int           // calls held in memory at most (-queue-capacity)
	MaxBackoff    time.Duration // cap of the retry backoff after a failed insert
}

// Inserter is where batches go: *Writer in production.
type Inserter interface {
	WriteCalls(ctx context.Context, calls []Call) error
	WriteDeadLetters(ctx context.Context, dls []DeadLetter) error
}

// Batcher queues accepted calls and inserts them in batches of BatchSize or
// every FlushEvery, whichever comes first. Only Run starts work; Add never
// blocks on ClickHouse.
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
// refuses for good go to the dead_letters table with the reason.
type Batcher struct {
	ins Inserter
	sp  *Spool
	cfg BatchConfig
	m   *Metrics
	log *slog.Logger

	mu      sync.Mutex
	calls   []Call
	dead    []DeadLetter
	marks   []mark   // spool records in memory, in order, for Commit
	loaded  SpoolPos // spool records before this are in memory or inserted
	queued  counts   // calls and dead letters ever put in memory
	done    counts   // of those, inserted (or dead-lettered)
	wake    chan struct{}
	flushed chan struct{} // closed and replaced after each successful flush
	logged  time.Time     // last push-back log line
}

type counts struct{ calls, dead uint64 }

// mark is the end of one spool record and the queued counts after it: the
// record is in ClickHouse once done reaches both.
type mark struct {
	end SpoolPos
	at  counts
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
func (b *Batcher) Add(calls []Call, dead []DeadLetter) error {
	if b.sp == nil {
		return b.addMemory(calls, dead)
	}
	if len(calls) == 0 && len(dead) == 0 {
		return nil
	}
	payload := appendRecord(nil, calls, dead)
	b.mu.Lock()
	start, end, err := b.sp.Append(payload)
	if err != nil {
		b.enqueue(nil, dead)
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
		return err
	}
	spilled := false
	if b.loaded == start && len(b.calls)+len(calls) <= b.cfg.QueueCapacity {
		b.enqueue(calls, dead)
		b.marks = append(b.marks, mark{end: end, at: b.queued})
		b.loaded = end
	} else {
		spilled = true
	}
	n := len(b.calls)
	b.mu.Unlock()
	b.m.queued.Set(float64(n))
	if spilled {
		b.m.spilled.Add(float64(len(calls)))
	}
	if n >= b.cfg.BatchSize || len(dead) > 0 || spilled {
		b.poke()
	}
	if b.sp.cfg.Fsync == FsyncAlways {
		if err := b.sp.Sync(end); err != nil {
			// The calls are queued and will be inserted, but the sender
			// is told they are not safe; its resend is harmless.
			b.m.dropped.WithLabelValues("spool_error").Add(float64(len(calls)))
			return err
		}
	}
	return nil
}

func (b *Batcher) addMemory(calls []Call, dead []DeadLetter) error {
	b.mu.Lock()
	if len(b.calls)+len(calls) > b.cfg.QueueCapacity {
		b.enqueue(nil, dead)
		b.mu.Unlock()
		b.m.dropped.WithLabelValues("buffer_full").Add(float64(len(calls)))
		b.logPushBack("buffer_full", nil)
		return fmt.Errorf("%w (capacity %d calls): retry later, or raise -queue-capacity", ErrBufferFull, b.cfg.QueueCapacity)
	}
	b.enqueue(calls, dead)
	n := len(b.calls)
	b.mu.Unlock()
	b.m.queued.Set(float64(n))
	if n >= b.cfg.BatchSize || len(dead) > 0 {
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

// enqueue appends to the memory queue; mu must be held.
func (b *Batcher) enqueue(calls []Call, dead []DeadLetter) {
	b.calls = append(b.calls, calls...)
	b.dead = append(b.dead, dead...)
	b.queued.calls += uint64(len(calls))
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

// Queued returns the number of calls waiting in memory to be inserted.
// With a spool, more may wait on disk (mcplens_ingest_spool_bytes).
func (b *Batcher) Queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.calls)
}

// Run inserts batches until ctx is done. It returns nil on cancellation; the
// caller then calls Drain with a fresh deadline to flush what is left.
// Under -spool-fsync=interval it also fsyncs the spool on that interval.
func (b *Batcher) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	if b.sp != nil && b.sp.cfg.Fsync == FsyncInterval {
		wg.Add(1)
		go func() { defer wg.Done(); b.syncEvery(ctx) }()
	}
	t := time.NewTicker(b.cfg.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-b.wake:
		}
		for b.flushOnce(ctx) {
		}
	}
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
// counted, and Drain returns an error.
func (b *Batcher) Drain(ctx context.Context) error {
	for b.pending() {
		before := b.doneCount()
		b.flushOnce(ctx)
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

// pending reports whether calls or dead letters wait in memory or on disk.
func (b *Batcher) pending() bool {
	b.mu.Lock()
	busy := len(b.calls) > 0 || len(b.dead) > 0
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

// flushOnce reads spilled calls back from the spool while memory has room,
// inserts all dead letters and up to one batch of calls, commits the spool
// and reports whether more is ready to insert at once.
func (b *Batcher) flushOnce(ctx context.Context) bool {
	if err := b.load(); err != nil {
		b.log.Error("spool read failed", "err", err)
	}
	b.mu.Lock()
	n := min(len(b.calls), b.cfg.BatchSize)
	batch := b.calls[:n:n]
	dead := b.dead[:len(b.dead):len(b.dead)]
	b.mu.Unlock()

	if len(dead) > 0 {
		if !b.insertDead(ctx, dead) {
			return false // ctx ended; the dead letters stay queued
		}
		b.mu.Lock()
		b.dead = append([]DeadLetter(nil), b.dead[len(dead):]...)
		b.done.dead += uint64(len(dead))
		b.mu.Unlock()
	}
	if n > 0 {
		if !b.insertCalls(ctx, batch) {
			return false // ctx ended; the batch stays queued for Drain
		}
		b.mu.Lock()
		b.calls = append([]Call(nil), b.calls[n:]...)
		b.done.calls += uint64(n)
		close(b.flushed)
		b.flushed = make(chan struct{})
		b.mu.Unlock()
	}
	b.commit()
	b.mu.Lock()
	left, loaded := len(b.calls), b.loaded
	b.mu.Unlock()
	b.m.queued.Set(float64(left))
	if n == 0 && len(dead) == 0 {
		return false
	}
	return left >= b.cfg.BatchSize || b.sp != nil && loaded.before(b.sp.Head())
}

// load moves spilled records from the spool into the memory queue, in
// order, while there is room. A record larger than the whole queue is
// loaded alone into an empty queue, so that it cannot stall the spool.
func (b *Batcher) load() error {
	if b.sp == nil {
		return nil
	}
	b.mu.Lock()
	from, room, empty := b.loaded, b.cfg.QueueCapacity-len(b.calls), len(b.calls) == 0
	b.mu.Unlock()
	limit := b.sp.Head()
	if !from.before(limit) || room <= 0 && !empty {
		return nil
	}
	type rec struct {
		end   SpoolPos
		calls []Call
		dead  []DeadLetter
	}
	var recs []rec
	read := 0
	next, err := b.sp.Read(from, limit, func(p []byte, end SpoolPos) bool {
		nc, err := recordCalls(p)
		if err == nil && nc > room && !(empty && len(recs) == 0) {
			return false
		}
		calls, dead, err := decodeRecord(p, nil, nil)
		if err != nil {
			// The checksum held, so this is a record of another version
			// or a bug: count it and move on rather than stall.
			b.m.spoolErrors.WithLabelValues("corrupt").Inc()
			b.m.dropped.WithLabelValues("spool_corrupt").Inc()
			b.log.Error("spool: undecodable record skipped", "end", end, "err", err)
			calls, dead = nil, nil
		}
		recs = append(recs, rec{end: end, calls: calls, dead: dead})
		room -= len(calls)
		read += len(calls)
		return true
	})
	b.mu.Lock()
	for _, r := range recs {
		b.enqueue(r.calls, r.dead)
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

// commit tells the spool how far ClickHouse holds everything.
func (b *Batcher) commit() {
	if b.sp == nil {
		return
	}
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
func (b *Batcher) insertCalls(ctx context.Context, batch []Call) bool {
	for len(batch) > 0 {
		ok, err := b.attempt(ctx, "calls", func(ctx context.Context) error { return b.ins.WriteCalls(ctx, batch) })
		if !ok {
			return false
		}
		if err == nil {
			return true
		}
		var row *RowError
		if errors.As(err, &row) && row.Index >= 0 && row.Index < len(batch) {
			if !b.insertDead(ctx, []DeadLetter{rejectedCall(&batch[row.Index], err)}) {
				return false
			}
			b.m.deadLettered.WithLabelValues("bad_row").Inc()
			batch = append(append([]Call(nil), batch[:row.Index]...), batch[row.Index+1:]...)
			continue
		}
		dls := make([]DeadLetter, len(batch))
		for i := range batch {
			dls[i] = rejectedCall(&batch[i], err)
		}
		b.log.Error("clickhouse refused a batch for good; its calls go to dead_letters", "calls", len(batch), "err", err)
		if !b.insertDead(ctx, dls) {
			return false
		}
		b.m.deadLettered.WithLabelValues("server_rejected").Add(float64(len(batch)))
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

// rejectedCall is the dead letter of a call ClickHouse refused: the call as
// JSON, so that it can be inspected and re-ingested after the fix.
func rejectedCall(c *Call, err error) DeadLetter {
	payload, jerr := json.Marshal(c)
	if jerr != nil {
		payload = []byte(fmt.Sprintf("%+v", *c))
	}
	reason := "insert refused by clickhouse: " + err.Error()
	return DeadLetter{Received: time.Now().UTC(), Tenant: c.Tenant, Source: c.Source, Reason: reason[:utf8Cut([]byte(reason), 1024)],
		Payload: string(payload[:utf8Cut(payload, MaxDeadLetterPayload)])}
}
