package pipeline

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// gatedInserter holds every WriteBatch whose first call's TimeMs is in
// hold until release is closed, and records the most inserts it saw in
// flight at once.
type gatedInserter struct {
	memInserter
	hold     map[int64]bool
	release  chan struct{}
	mu       sync.Mutex
	inFlight int
	most     int
	started  chan int64 // first TimeMs of each insert, as it starts
}

func (g *gatedInserter) WriteBatch(ctx context.Context, b *Batch) error {
	calls, err := b.Calls()
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	if g.started != nil {
		g.started <- calls[0].TimeMs
	}
	if g.hold[calls[0].TimeMs] {
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.memInserter.writeCalls(calls)
}

func TestBatcherRunsInsertsConcurrentlyAndCommitsTheSpoolInOrder(t *testing.T) {
	dir := t.TempDir()
	sp, m := openTestSpool(t, dir, SpoolConfig{})
	ins := &gatedInserter{hold: map[int64]bool{0: true}, release: make(chan struct{}), started: make(chan int64, 100)}
	b := NewSpooledBatcher(ins, sp, BatchConfig{BatchSize: 10, QueueCapacity: 100, FlushEvery: time.Hour, Inserts: 2}, m, quietLog())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()

	// Batch 0..9 is held; batch 10..19 goes round it.
	if err := b.Add(numbered(10, 0), nil); err != nil {
		t.Fatal(err)
	}
	if first := <-ins.started; first != 0 {
		t.Fatalf("first insert starts at %d, want 0", first)
	}
	afterFirst := sp.Head()
	if err := b.Add(numbered(10, 10), nil); err != nil {
		t.Fatal(err)
	}
	if second := <-ins.started; second != 10 {
		t.Fatalf("second insert starts at %d, want 10", second)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ins.inserted() < 10 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if ins.inserted() != 10 {
		t.Fatalf("the second batch did not go past the held first one: %d inserted", ins.inserted())
	}
	if c := sp.Committed(); !c.before(afterFirst) {
		t.Fatalf("spool committed to %v while the batch ending at %v is still in flight", c, afterFirst)
	}
	for b.Queued() != 10 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // the insert returned; its batch is being marked done
	}
	if q := b.Queued(); q != 10 {
		t.Errorf("Queued %d with the held batch in flight, want 10", q)
	}
	if c := sp.Committed(); !c.before(afterFirst) {
		t.Fatalf("spool committed to %v once the second batch was done, while the batch ending at %v is still in flight", c, afterFirst)
	}

	close(ins.release)
	for ins.inserted() < 20 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if err := b.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ins.most != 2 {
		t.Errorf("at most %d inserts in flight, want 2", ins.most)
	}
	got := timeMsOf(ins.calls)
	slices.Sort(got)
	if want := timeMsOf(numbered(20, 0)); !slices.Equal(got, want) {
		t.Fatalf("inserted %v, want each of 0..19 once", got)
	}
	if c, h := sp.Committed(), sp.Head(); c != h {
		t.Errorf("committed %v, head %v after everything was inserted", c, h)
	}
	sp.Close()
}

func TestBatcherShutdownLetsInsertsInFlightFinish(t *testing.T) {
	ins := &gatedInserter{hold: map[int64]bool{0: true, 10: true}, release: make(chan struct{}), started: make(chan int64, 100)}
	b := NewBatcher(ins, BatchConfig{BatchSize: 10, QueueCapacity: 100, FlushEvery: time.Hour, Inserts: 2, MaxBackoff: time.Millisecond},
		NewMetrics(prometheus.NewRegistry()), quietLog())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	if err := b.Add(numbered(25, 0), nil); err != nil {
		t.Fatal(err)
	}
	<-ins.started
	<-ins.started
	cancel() // both inserts are in flight: Run waits for them
	select {
	case <-done:
		t.Fatal("Run returned with inserts in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(ins.release)
	<-done
	if got := ins.inserted(); got != 20 {
		t.Fatalf("%d calls inserted by the inserts in flight at shutdown, want 20", got)
	}
	if err := b.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := timeMsOf(ins.calls)
	slices.Sort(got)
	if want := timeMsOf(numbered(25, 0)); !slices.Equal(got, want) {
		t.Fatalf("inserted %v, want each of 0..24 once", got)
	}
}

func TestBatcherShutdownRequeuesFailingBatchesForDrain(t *testing.T) {
	ins := &scriptedInserter{down: true}
	b := NewBatcher(ins, BatchConfig{BatchSize: 10, QueueCapacity: 100, FlushEvery: time.Hour, Inserts: 2, MaxBackoff: 5 * time.Millisecond},
		NewMetrics(prometheus.NewRegistry()), quietLog())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	if err := b.Add(numbered(25, 0), nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond) // both batches fail and back off
	cancel()
	<-done
	if q := b.Queued(); q != 25 {
		t.Fatalf("Queued %d after Run returned, want all 25", q)
	}
	ins.setDown(false)
	if err := b.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := timeMsOf(ins.calls)
	slices.Sort(got)
	if want := timeMsOf(numbered(25, 0)); !slices.Equal(got, want) {
		t.Fatalf("inserted %v, want each of 0..24 once", got)
	}
	if b.Queued() != 0 || b.pending() {
		t.Errorf("after Drain: %d queued, pending %v", b.Queued(), b.pending())
	}
}

// Taking batches from the queue's front, with appends and reallocations in
// between, keeps every call once and in order.
func TestBatcherQueueKeepsOrderAcrossTakesAndGrowth(t *testing.T) {
	ins := &memInserter{}
	b := NewBatcher(ins, BatchConfig{BatchSize: 7, QueueCapacity: 1000, FlushEvery: time.Hour}, NewMetrics(prometheus.NewRegistry()), quietLog())
	next := 0
	for round := range 50 {
		n := 1 + round%13
		if err := b.Add(numbered(n, next), nil); err != nil {
			t.Fatal(err)
		}
		next += n
		if round%3 == 0 {
			b.flushOnce(context.Background())
		}
	}
	if err := b.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := timeMsOf(ins.calls), timeMsOf(numbered(next, 0)); !slices.Equal(got, want) {
		t.Fatalf("inserted out of order or not exactly once:\n got %v\nwant %v", got, want)
	}
	for _, n := range ins.batches {
		if n > 7 {
			t.Errorf("batch of %d calls exceeds -batch-size 7", n)
		}
	}
}

func TestBatcherFlushesTheEndOfABurstWhenSendersPause(t *testing.T) {
	ins := &memInserter{}
	b := NewBatcher(ins, BatchConfig{BatchSize: 100, QueueCapacity: 1000, FlushEvery: time.Hour, FlushIdle: 20 * time.Millisecond},
		NewMetrics(prometheus.NewRegistry()), quietLog())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.Run(ctx)

	if err := b.Add(numbered(5, 0), nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := ins.inserted(); n != 0 {
		t.Fatalf("%d calls inserted: less than a tenth of a batch must wait for -flush-every", n)
	}
	if err := b.Add(numbered(6, 5), nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ins.inserted() < 11 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := ins.inserted(); n != 11 {
		t.Fatalf("%d calls inserted after the senders paused with 11 queued, want 11", n)
	}
}

// An Add that lands while load reads the spool, with nothing spilled, is
// queued by Add itself; load must not queue the same record again.
func TestSpoolReadRacingAnAddQueuesTheRecordOnce(t *testing.T) {
	sp, m := openTestSpool(t, t.TempDir(), SpoolConfig{})
	defer sp.Close()
	ins := &memInserter{}
	b := NewSpooledBatcher(ins, sp, BatchConfig{BatchSize: 10, QueueCapacity: 100, FlushEvery: time.Hour}, m, quietLog())
	b.beforeRead = func() {
		b.beforeRead = nil
		if err := b.Add(numbered(3, 0), nil); err != nil {
			t.Error(err)
		}
	}
	if err := b.load(); err != nil {
		t.Fatal(err)
	}
	if q := b.Queued(); q != 3 {
		t.Fatalf("Queued %d after an Add raced the spool read, want 3", q)
	}
	if err := b.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := timeMsOf(ins.calls), timeMsOf(numbered(3, 0)); !slices.Equal(got, want) {
		t.Fatalf("inserted %v, want %v", got, want)
	}
}
