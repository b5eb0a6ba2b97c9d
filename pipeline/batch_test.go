package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// memInserter records inserted batches; fail makes the next inserts fail.
type memInserter struct {
	mu      sync.Mutex
	calls   []Call
	dead    []DeadLetter
	batches []int
	fail    int
}

func (m *memInserter) WriteBatch(_ context.Context, b *Batch) error {
	calls, err := b.Calls()
	if err != nil {
		return err
	}
	return m.writeCalls(calls)
}

func (m *memInserter) writeCalls(calls []Call) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail > 0 {
		m.fail--
		return errors.New("clickhouse unreachable")
	}
	m.calls = append(m.calls, calls...)
	m.batches = append(m.batches, len(calls))
	return nil
}

func (m *memInserter) WriteDeadLetters(_ context.Context, dls []DeadLetter) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dead = append(m.dead, dls...)
	return nil
}

func (m *memInserter) inserted() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.calls)
}

func numbered(n, from int) []Call {
	out := make([]Call, n)
	for i := range out {
		out[i] = Call{TimeMs: int64(from + i)}
	}
	return out
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestBatcherPushesBackWhenFull(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	b := NewBatcher(&memInserter{}, BatchConfig{BatchSize: 10, QueueCapacity: 25, FlushEvery: time.Hour}, m, quietLog())
	if err := b.Add(numbered(20, 0), nil); err != nil {
		t.Fatal(err)
	}
	err := b.Add(numbered(6, 20), []DeadLetter{{Reason: "bad"}})
	if !errors.Is(err, ErrBufferFull) {
		t.Fatalf("Add over capacity: %v, want ErrBufferFull", err)
	}
	if got := b.Queued(); got != 20 {
		t.Errorf("queued %d after a refused Add, want 20 (all or nothing)", got)
	}
	if got := testutil.ToFloat64(m.dropped.WithLabelValues("buffer_full")); got != 6 {
		t.Errorf("buffer_full drops counted %v, want 6", got)
	}
	if err := b.Add(numbered(5, 20), nil); err != nil {
		t.Errorf("Add that fits exactly: %v", err)
	}
}

func TestBatcherRetriesFailedInsertsWithoutLoss(t *testing.T) {
	ins := &memInserter{fail: 3}
	b := NewBatcher(ins, BatchConfig{BatchSize: 10, QueueCapacity: 1000, FlushEvery: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond},
		NewMetrics(prometheus.NewRegistry()), quietLog())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	for i := 0; i < 5; i++ {
		if err := b.Add(numbered(7, i*7), nil); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for ins.inserted() < 35 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if got := ins.inserted(); got != 35 {
		t.Fatalf("inserted %d calls, want 35", got)
	}
	seen := map[int64]bool{}
	for _, c := range ins.calls {
		if seen[c.TimeMs] {
			t.Errorf("call %d inserted twice", c.TimeMs)
		}
		seen[c.TimeMs] = true
	}
	for _, n := range ins.batches {
		if n > 10 {
			t.Errorf("batch of %d calls exceeds -batch-size 10", n)
		}
	}
}

func TestBatcherDrainFlushesAndHonoursItsDeadline(t *testing.T) {
	ins := &memInserter{}
	b := NewBatcher(ins, BatchConfig{BatchSize: 4, QueueCapacity: 100, FlushEvery: time.Hour}, NewMetrics(prometheus.NewRegistry()), quietLog())
	if err := b.Add(numbered(10, 0), []DeadLetter{{Reason: "x"}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ins.inserted() != 10 || len(ins.dead) != 1 || b.Queued() != 0 {
		t.Errorf("after Drain: %d calls, %d dead letters inserted, %d queued", ins.inserted(), len(ins.dead), b.Queued())
	}

	stuck := &memInserter{fail: 1 << 30}
	b = NewBatcher(stuck, BatchConfig{BatchSize: 4, QueueCapacity: 100, FlushEvery: time.Hour, MaxBackoff: 10 * time.Millisecond},
		NewMetrics(prometheus.NewRegistry()), quietLog())
	if err := b.Add(numbered(3, 0), nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := b.Drain(ctx); err == nil || b.Queued() != 3 {
		t.Errorf("Drain against a dead ClickHouse: err %v, %d queued; want an error and the calls kept", err, b.Queued())
	}
}

// TestBatcherKeepsWhatAddWasGivenNotTheCallersMemory reuses everything the
// caller passed to Add, the arrays behind ArgKeys and ArgValues included,
// before the calls are inserted: the queue holds the calls encoded, so what
// is inserted is what Add was given, in memory-only and spooled modes.
func TestBatcherKeepsWhatAddWasGivenNotTheCallersMemory(t *testing.T) {
	for _, spooled := range []bool{false, true} {
		ins := &memInserter{}
		m := NewMetrics(prometheus.NewRegistry())
		var sp *Spool
		if spooled {
			sp, _ = openTestSpool(t, t.TempDir(), SpoolConfig{})
		}
		b := NewSpooledBatcher(ins, sp, BatchConfig{BatchSize: 4, QueueCapacity: 100, FlushEvery: time.Hour}, m, quietLog())
		var want []Call
		calls := make([]Call, 3)
		var keys, values [3][2]string // each round writes them again
		for round := range 3 {
			for i := range calls {
				keys[i] = [2]string{"department", "q"}
				values[i] = [2]string{fmt.Sprint("finance-", round, i), fmt.Sprint("报销-", round, i)}
				calls[i] = Call{TimeMs: int64(10*round + i), Tool: fmt.Sprint("tool-", i), ArgKeys: keys[i][:], ArgValues: values[i][:]}
				c := calls[i]
				c.ArgKeys, c.ArgValues = slices.Clone(keys[i][:]), slices.Clone(values[i][:])
				want = append(want, c)
			}
			if err := b.Add(calls, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ins.calls, want) {
			t.Errorf("spooled %v: inserted calls are not those Add was given:\n got %+v\nwant %+v", spooled, ins.calls, want)
		}
		if sp != nil {
			sp.Close()
		}
	}
}

// TestBatcherQueuesRecordsNearTheirSize encodes a request of large calls,
// then one of small calls, and the other way round: the buffer the queue
// keeps is never much larger than its record, whatever the previous
// request predicted.
func TestBatcherQueuesRecordsNearTheirSize(t *testing.T) {
	b := NewBatcher(&memInserter{}, BatchConfig{BatchSize: 10}, NewMetrics(prometheus.NewRegistry()), quietLog())
	big, small := make([]Call, 1000), make([]Call, 1000)
	for i := range big {
		big[i] = Call{Message: strings.Repeat("x", 5000), TimeMs: int64(i)}
		small[i] = Call{TimeMs: int64(i)}
	}
	for _, reqs := range [][][]Call{{big, small}, {small, big}, {small, small}} {
		for _, calls := range reqs {
			rec, offs := b.encode(recordHeader, calls, nil)
			if len(offs) != len(calls) {
				t.Fatalf("%d offsets for %d calls", len(offs), len(calls))
			}
			if waste := cap(rec) - len(rec); waste > len(rec)/4+4096 {
				t.Errorf("a %d-byte record kept in a %d-byte buffer", len(rec), cap(rec))
			}
			got, _, err := decodeRecord(rec[recordHeader:], nil, nil)
			if err != nil || !reflect.DeepEqual(got, calls) {
				t.Fatalf("encoded record does not decode to its calls: %v", err)
			}
		}
	}
}
