package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// ErrBufferFull is returned by Batcher.Add when the queue cannot take the
// calls; the HTTP layer answers 503 with Retry-After and nothing is accepted.
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

// Batcher queues accepted calls in a bounded buffer and inserts them in
// batches of BatchSize or every FlushEvery, whichever comes first. Only Run
// starts work; Add never blocks. A failed insert is retried with capped
// exponential backoff and jitter while the calls stay queued, so accepted
// calls are not dropped; the queue then fills and Add pushes back.
type Batcher struct {
	ins Inserter
	cfg BatchConfig
	m   *Metrics
	log *slog.Logger

	mu      sync.Mutex
	calls   []Call
	dead    []DeadLetter
	wake    chan struct{}
	flushed chan struct{} // closed and replaced after each successful flush
}

// NewBatcher returns a Batcher that inserts through ins.
func NewBatcher(ins Inserter, cfg BatchConfig, m *Metrics, log *slog.Logger) *Batcher {
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
	return &Batcher{ins: ins, cfg: cfg, m: m, log: log, wake: make(chan struct{}, 1), flushed: make(chan struct{})}
}

// Add queues calls and dead letters as one unit: all of them or, when the
// queue lacks room for the calls, none (ErrBufferFull). Dead letters are
// always queued; they are few and bounded by the request size limits. Add is
// safe for concurrent use and never blocks on I/O.
func (b *Batcher) Add(calls []Call, dead []DeadLetter) error {
	b.mu.Lock()
	if len(b.calls)+len(calls) > b.cfg.QueueCapacity {
		b.dead = append(b.dead, dead...)
		b.mu.Unlock()
		b.m.dropped.WithLabelValues("buffer_full").Add(float64(len(calls)))
		return fmt.Errorf("%w (capacity %d calls): retry later, or raise -queue-capacity", ErrBufferFull, b.cfg.QueueCapacity)
	}
	b.calls = append(b.calls, calls...)
	b.dead = append(b.dead, dead...)
	n := len(b.calls)
	b.mu.Unlock()
	b.m.queued.Set(float64(n))
	if n >= b.cfg.BatchSize || len(dead) > 0 {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// Queued returns the number of calls waiting to be inserted.
func (b *Batcher) Queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.calls)
}

// Run inserts batches until ctx is done. It returns nil on cancellation; the
// caller then calls Drain with a fresh deadline to flush what is left.
func (b *Batcher) Run(ctx context.Context) error {
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

// Drain flushes everything queued, retrying failed inserts until ctx ends.
// It gets its own deadline because the serving context is already cancelled
// when shutdown starts.
func (b *Batcher) Drain(ctx context.Context) error {
	for {
		b.mu.Lock()
		left, dead := len(b.calls), len(b.dead)
		b.mu.Unlock()
		if left == 0 && dead == 0 {
			return nil
		}
		b.flushOnce(ctx)
		if err := ctx.Err(); err != nil {
			b.m.dropped.WithLabelValues("shutdown_timeout").Add(float64(b.Queued()))
			return fmt.Errorf("drain: %d calls not inserted: %w", b.Queued(), err)
		}
	}
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

// flushOnce inserts up to one batch of calls (and all dead letters) and
// reports whether a full batch remains queued.
func (b *Batcher) flushOnce(ctx context.Context) bool {
	b.mu.Lock()
	n := min(len(b.calls), b.cfg.BatchSize)
	batch := b.calls[:n:n]
	dead := b.dead
	b.dead = nil
	b.mu.Unlock()

	if len(dead) > 0 {
		b.retry(ctx, "dead_letters", func(ctx context.Context) error { return b.ins.WriteDeadLetters(ctx, dead) })
	}
	if n == 0 {
		return false
	}
	if !b.retry(ctx, "calls", func(ctx context.Context) error { return b.ins.WriteCalls(ctx, batch) }) {
		return false // ctx ended; the batch stays queued for Drain
	}
	b.mu.Lock()
	b.calls = append([]Call(nil), b.calls[n:]...)
	left := len(b.calls)
	close(b.flushed)
	b.flushed = make(chan struct{})
	b.mu.Unlock()
	b.m.queued.Set(float64(left))
	return left >= b.cfg.BatchSize
}

// retry runs insert until it succeeds or ctx ends, with capped exponential
// backoff and jitter, and reports success.
func (b *Batcher) retry(ctx context.Context, table string, insert func(context.Context) error) bool {
	backoff := 100 * time.Millisecond
	for {
		err := insert(ctx)
		if err == nil {
			return true
		}
		b.m.insertErrors.WithLabelValues(table).Inc()
		b.log.Warn("insert failed; retrying", "table", table, "backoff", backoff, "err", err)
		sleep := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(sleep):
		}
		backoff = min(2*backoff, b.cfg.MaxBackoff)
	}
}
