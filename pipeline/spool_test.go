package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcplens/mcplens/pipeline/classify"
)

// fullCall returns a Call with every field set to a value that differs
// from its zero value and from the other fields of its type.
func fullCall(t testing.TB, seed int) Call {
	t.Helper()
	var c Call
	v := reflect.ValueOf(&c).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		n := seed*100 + i + 1
		switch f.Kind() {
		case reflect.String:
			f.SetString(fmt.Sprintf("%s-%d-é", v.Type().Field(i).Name, n))
		case reflect.Int8, reflect.Int32, reflect.Int64:
			f.SetInt(int64(-n))
		case reflect.Uint8, reflect.Uint64:
			f.SetUint(uint64(n))
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{fmt.Sprint("a", n), "", fmt.Sprint("b", n)}))
		case reflect.Struct:
			f.Set(reflect.ValueOf(time.Date(2026, 11, 29, 10, 0, i, 123456789, time.UTC)))
		default:
			t.Fatalf("fullCall: field %s has kind %s; teach fullCall and spoolcodec.go about it", v.Type().Field(i).Name, f.Kind())
		}
	}
	return c
}

func TestSpoolRecordRoundTripsEveryField(t *testing.T) {
	calls := []Call{fullCall(t, 1), fullCall(t, 2), {ArgKeys: []string{}, Time: time.Unix(0, 0).UTC()}}
	dead := []DeadLetter{{Received: time.Date(2026, 11, 29, 10, 0, 0, 5, time.UTC), Tenant: "t", Source: "capture", Line: 7, Reason: "r", Payload: "{oops"}}
	p := appendRecord(nil, calls, dead, nil)
	if n, err := recordCalls(p); err != nil || n != 3 {
		t.Fatalf("recordCalls: %d, %v; want 3", n, err)
	}
	gotCalls, gotDead, err := decodeRecord(p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotCalls, calls) {
		t.Errorf("calls changed in the round trip\n got %+v\nwant %+v", gotCalls, calls)
	}
	if !reflect.DeepEqual(gotDead, dead) {
		t.Errorf("dead letters changed in the round trip\n got %+v\nwant %+v", gotDead, dead)
	}
	for cut := 0; cut < len(p); cut += 7 {
		if _, _, err := decodeRecord(p[:cut], nil, nil); err == nil {
			t.Fatalf("a record cut at %d of %d bytes decoded without error", cut, len(p))
		}
	}
}

// TestSpoolReadsVersionOneRecords: a spool written before ArgsValidated
// holds version 1 records, the same calls without its byte; they decode,
// by every reader, with ArgsValidated 0.
func TestSpoolReadsVersionOneRecords(t *testing.T) {
	c := fullCall(t, 1)
	c.ArgsValidated = 0
	v2 := appendRecord(nil, []Call{c}, nil, nil)
	if v2[0] != recordVersion || v2[len(v2)-1] != 0 {
		t.Fatalf("a one-call record without dead letters should end with the call's ArgsValidated byte: % x", v2[len(v2)-4:])
	}
	v1 := append([]byte{1}, v2[1:len(v2)-1]...)
	got, _, err := decodeRecord(v1, nil, nil)
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], c) {
		t.Fatalf("version 1 record: %v, %+v; want %+v", err, got, c)
	}
	offs, _, err := checkRecord(v1)
	if err != nil || len(offs) != 1 {
		t.Fatalf("checkRecord of a version 1 record: %v, %v", err, offs)
	}
	var view Call
	if _, err := decodeCallAt(v1, offs[0], &view, nil); err != nil || !reflect.DeepEqual(view, c) {
		t.Fatalf("decodeCallAt of a version 1 record: %v, %+v; want %+v", err, view, c)
	}
	// The same bytes with version 2 lack the last field: refused, not misread.
	if _, _, err := decodeRecord(append([]byte{2}, v1[1:]...), nil, nil); err == nil {
		t.Fatal("a version 2 record without its ArgsValidated byte decoded")
	}
	for _, v := range []byte{0, 3} {
		if _, _, err := decodeRecord(append([]byte{v}, v2[1:]...), nil, nil); err == nil {
			t.Errorf("record version %d decoded", v)
		}
	}
}

// TestDecodeViewsMatchDecodeRecord holds the copying decoder (spool tests,
// and what a record means) and the viewing ones (the spool loads' check,
// the Writer's blocks and sort keys) to the same result, and checks that
// the views copy nothing and the check's dead letters copy everything.
func TestDecodeViewsMatchDecodeRecord(t *testing.T) {
	calls := []Call{fullCall(t, 1), {ArgKeys: []string{}, Time: time.Unix(0, 0).UTC()}, fullCall(t, 2), fullCall(t, 3)}
	dead := []DeadLetter{{Received: time.Date(2026, 11, 29, 10, 0, 0, 5, time.UTC), Tenant: "t", Source: "capture", Line: 7, Reason: "r", Payload: "{oops"}}
	var offs []uint32
	p := appendRecord(nil, calls, dead, &offs)
	want, wantDead, err := decodeRecord(p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkOffs, gotDead, err := checkRecord(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotDead, wantDead) {
		t.Fatalf("checkRecord's dead letters differ from decodeRecord's\n got %+v\nwant %+v", gotDead, wantDead)
	}
	if !slices.Equal(checkOffs, offs) || len(offs) != len(calls) {
		t.Fatalf("call offsets: checkRecord %v, appendRecord %v", checkOffs, offs)
	}
	inside := func(s string) bool {
		d := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		lo := uintptr(unsafe.Pointer(&p[0]))
		return d >= lo && d+uintptr(len(s)) <= lo+uintptr(len(p))
	}
	if inside(gotDead[0].Payload) || inside(gotDead[0].Tenant) {
		t.Error("checkRecord's dead letter views the record, which the spool reuses")
	}
	var first Call
	arena, err := decodeCallAt(p, offs[0], &first, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(arena) != 6 {
		t.Errorf("arena holds %d strings, want the 6 of the call's ArgKeys and ArgValues", len(arena))
	}
	v := reflect.ValueOf(first)
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.String && !inside(f.String()) {
			t.Errorf("%s is a copy, not a view of the record", v.Type().Field(i).Name)
		}
	}
	if !inside(first.ArgValues[2]) {
		t.Error("an ArgValues string is a copy, not a view of the record")
	}
	for i, off := range offs {
		var c Call
		if _, err := decodeCallAt(p, off, &c, nil); err != nil || !reflect.DeepEqual(c, want[i]) {
			t.Errorf("decodeCallAt call %d: %v, or it differs from decodeRecord's", i, err)
		}
		k, err := sortKeyAt(p, off)
		w := sortKey{tenant: want[i].Tenant, server: want[i].Server, tool: want[i].Tool, session: want[i].SessionKey, ts: want[i].TimeMs, id: want[i].CallID}
		if err != nil || k != w {
			t.Errorf("sortKeyAt call %d: %+v, %v; want %+v", i, k, err, w)
		}
		if _, err := decodeCallAt(p[:off+30], off, &c, nil); err == nil {
			t.Errorf("call %d cut after 30 bytes decoded without error", i)
		}
	}
	if _, err := decodeCallAt(p, uint32(len(p)), new(Call), nil); err == nil {
		t.Error("decodeCallAt past the record's end: no error")
	}
	if _, err := sortKeyAt(p, uint32(len(p))); err == nil {
		t.Error("sortKeyAt past the record's end: no error")
	}
	for cut := 0; cut < len(p); cut += 7 {
		if _, _, err := checkRecord(p[:cut]); err == nil {
			t.Fatalf("a record cut at %d of %d bytes passed checkRecord", cut, len(p))
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(appendRecord(nil, []Call{fullCall(f, 1)}, []DeadLetter{{Reason: "x"}}, nil))
	f.Add(appendRecord(nil, nil, nil, nil))
	f.Add([]byte{recordVersion, 0xff, 0xff, 0xff, 0xff, 0x0f, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		calls, dead, err := decodeRecord(p, nil, nil)
		offs, checkDead, cerr := checkRecord(p)
		if (err == nil) != (cerr == nil) {
			t.Fatalf("decodeRecord: %v; checkRecord: %v", err, cerr)
		}
		if err != nil {
			return
		}
		if !reflect.DeepEqual(checkDead, dead) || len(offs) != len(calls) {
			t.Fatal("checkRecord differs from decodeRecord")
		}
		for i, off := range offs {
			var c Call
			if _, err := decodeCallAt(p, off, &c, nil); err != nil || !reflect.DeepEqual(c, calls[i]) {
				t.Fatalf("decodeCallAt call %d: %v, or it differs", i, err)
			}
			if k, err := sortKeyAt(p, off); err != nil || k.session != calls[i].SessionKey || k.id != calls[i].CallID {
				t.Fatalf("sortKeyAt call %d: %v, or it differs", i, err)
			}
		}
		again, againDead, err := decodeRecord(appendRecord(nil, calls, dead, nil), nil, nil)
		if err != nil || len(again) != len(calls) || len(againDead) != len(dead) {
			t.Fatalf("re-encoded record does not decode the same: %v", err)
		}
	})
}

func openTestSpool(t *testing.T, dir string, cfg SpoolConfig) (*Spool, *Metrics) {
	t.Helper()
	m := NewMetrics(prometheus.NewRegistry())
	cfg.Dir = dir
	sp, err := OpenSpool(cfg, m, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	return sp, m
}

// readAll returns every call from the committed position to the head.
func readAll(t *testing.T, sp *Spool) []Call {
	t.Helper()
	var out []Call
	_, err := sp.Read(sp.Committed(), sp.Head(), func(p []byte, _ SpoolPos) bool {
		var err error
		out, _, err = decodeRecord(p, out, nil)
		if err != nil {
			t.Fatal(err)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func timeMsOf(calls []Call) []int64 {
	out := make([]int64, len(calls))
	for i := range calls {
		out[i] = calls[i].TimeMs
	}
	return out
}

func TestSpoolReopenCutsATornRecordAndKeepsTheRest(t *testing.T) {
	dir := t.TempDir()
	sp, _ := openTestSpool(t, dir, SpoolConfig{SegmentBytes: 300})
	for i := range 6 {
		if _, _, err := sp.Append(appendRecord(nil, numbered(2, 2*i), nil, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(sp.segs); got < 3 {
		t.Fatalf("%d segments after 6 records with 300-byte segments; want rotation", got)
	}
	last := sp.segPath(sp.Head().Seg)
	sp.closeFiles() // a crash: no checkpoint, no fsync
	// A torn write: the header of a record whose payload never arrived.
	f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{200, 0, 0, 0, 1, 2})
	f.Close()

	sp, _ = openTestSpool(t, dir, SpoolConfig{SegmentBytes: 300})
	defer sp.Close()
	want := timeMsOf(numbered(12, 0))
	if got := timeMsOf(readAll(t, sp)); !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopen: %v, want %v", got, want)
	}
	if _, _, err := sp.Append(appendRecord(nil, numbered(1, 12), nil, nil)); err != nil {
		t.Fatal(err)
	}
	if got := timeMsOf(readAll(t, sp)); len(got) != 13 || got[12] != 12 {
		t.Fatalf("append after the cut: %v", got)
	}
}

// TestSpoolCheckpointPastAPowerLossIsRewritten: a checkpoint written past
// what was fsynced outlives a power loss that takes the records it passed
// (the Batcher may insert and commit a record before its fsync). The start
// after it reads from the end of what is left; a record appended then must
// not be skipped by the next start, which reads the same checkpoint file.
func TestSpoolCheckpointPastAPowerLossIsRewritten(t *testing.T) {
	dir := t.TempDir()
	sp, _ := openTestSpool(t, dir, SpoolConfig{})
	if _, _, err := sp.Append(appendRecord(nil, numbered(1, 0), nil, nil)); err != nil {
		t.Fatal(err)
	}
	if err := sp.Sync(sp.Head()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sp.Append(appendRecord(nil, numbered(1, 1), nil, nil)); err != nil {
		t.Fatal(err)
	}
	if err := sp.Commit(sp.Head()); err != nil { // inserted before its fsync
		t.Fatal(err)
	}
	losePower(t, sp) // the second record gone, the checkpoint past it kept

	sp, _ = openTestSpool(t, dir, SpoolConfig{})
	if got := readAll(t, sp); len(got) != 0 {
		t.Fatalf("after the power loss %d calls to replay, want none", len(got))
	}
	if _, _, err := sp.Append(appendRecord(nil, numbered(3, 10), nil, nil)); err != nil {
		t.Fatal(err)
	}
	if err := sp.Sync(sp.Head()); err != nil {
		t.Fatal(err)
	}
	sp.closeFiles() // a crash before any commit

	sp, _ = openTestSpool(t, dir, SpoolConfig{})
	defer sp.Close()
	if got := timeMsOf(readAll(t, sp)); !reflect.DeepEqual(got, []int64{10, 11, 12}) {
		t.Fatalf("after the crash: %v, want the three calls appended after the power loss", got)
	}
}

func TestSpoolIsLockedToOneProcess(t *testing.T) {
	dir := t.TempDir()
	sp, _ := openTestSpool(t, dir, SpoolConfig{})
	if _, err := OpenSpool(SpoolConfig{Dir: dir}, NewMetrics(prometheus.NewRegistry()), quietLog()); err == nil {
		t.Fatal("a second OpenSpool on a locked directory succeeded")
	}
	sp.Close()
	sp, _ = openTestSpool(t, dir, SpoolConfig{})
	sp.Close()
}

// scriptedInserter fails WriteBatch with the errors in script, in turn,
// then succeeds; every batch it is given is recorded.
type scriptedInserter struct {
	memInserter
	script []error
	down   bool // while set, WriteBatch fails with a network error
}

func (s *scriptedInserter) WriteBatch(ctx context.Context, calls *Batch) error {
	s.mu.Lock()
	if s.down {
		s.mu.Unlock()
		return &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}
	}
	if len(s.script) > 0 {
		err := s.script[0]
		s.script = s.script[1:]
		s.mu.Unlock()
		if err != nil {
			return err
		}
		return s.memInserter.WriteBatch(ctx, calls)
	}
	s.mu.Unlock()
	return s.memInserter.WriteBatch(ctx, calls)
}

func (s *scriptedInserter) setDown(v bool) {
	s.mu.Lock()
	s.down = v
	s.mu.Unlock()
}

func TestSpooledBatcherBoundsMemoryAndKeepsOrderThroughAnOutage(t *testing.T) {
	dir := t.TempDir()
	sp, m := openTestSpool(t, dir, SpoolConfig{SegmentBytes: 512})
	ins := &scriptedInserter{down: true}
	b := NewSpooledBatcher(ins, sp, BatchConfig{BatchSize: 4, QueueCapacity: 10, FlushEvery: 5 * time.Millisecond, MaxBackoff: 10 * time.Millisecond}, m, quietLog())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	for i := range 40 {
		if err := b.Add(numbered(3, 3*i), nil); err != nil {
			t.Fatalf("Add %d during the outage: %v", i, err)
		}
		if q := b.Queued(); q > 10 {
			t.Fatalf("memory queue holds %d calls, capacity 10", q)
		}
	}
	if got := testutil.ToFloat64(m.spilled); got < 100 {
		t.Errorf("spilled %v calls to disk, want most of 120", got)
	}
	ins.setDown(false)
	deadline := time.Now().Add(10 * time.Second)
	for ins.inserted() < 120 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if err := b.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := timeMsOf(ins.calls), timeMsOf(numbered(120, 0)); !reflect.DeepEqual(got, want) {
		t.Fatalf("inserted out of order or not exactly once:\n got %v\nwant %v", got, want)
	}
	if c, h := sp.Committed(), sp.Head(); c != h {
		t.Errorf("committed %v, head %v: everything was inserted", c, h)
	}
	if n := len(sp.segs); n > 2 {
		t.Errorf("%d segments left after everything was committed", n)
	}
	sp.Close()
}

func TestSpooledBatcherReplaysWhatACrashLeft(t *testing.T) {
	dir := t.TempDir()
	sp, m := openTestSpool(t, dir, SpoolConfig{})
	first := &scriptedInserter{}
	b := NewSpooledBatcher(first, sp, BatchConfig{BatchSize: 5, QueueCapacity: 100, FlushEvery: time.Hour}, m, quietLog())
	if err := b.Add(numbered(5, 0), nil); err != nil {
		t.Fatal(err)
	}
	b.flushOnce(context.Background()) // 0..4 inserted and committed
	first.setDown(true)
	if err := b.Add(numbered(7, 5), []DeadLetter{{Reason: "bad line"}}); err != nil {
		t.Fatal(err)
	}
	sp.closeFiles() // SIGKILL: no drain, no checkpoint beyond the commit

	sp, m = openTestSpool(t, dir, SpoolConfig{})
	second := &scriptedInserter{}
	b = NewSpooledBatcher(second, sp, BatchConfig{BatchSize: 5, QueueCapacity: 100, FlushEvery: time.Hour}, m, quietLog())
	if err := b.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := timeMsOf(second.calls), timeMsOf(numbered(7, 5)); !reflect.DeepEqual(got, want) {
		t.Errorf("replayed %v, want %v", got, want)
	}
	if len(second.dead) != 1 || second.dead[0].Reason != "bad line" {
		t.Errorf("dead letters replayed: %+v", second.dead)
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	sp, _ = openTestSpool(t, dir, SpoolConfig{})
	defer sp.Close()
	if left := readAll(t, sp); len(left) != 0 {
		t.Errorf("%d calls left in the spool after a full drain", len(left))
	}
}

func TestSpoolFullAndDiskFullPushBackAndLoseNothing(t *testing.T) {
	dir := t.TempDir()
	rec := appendRecord(nil, numbered(10, 0), nil, nil)
	sp, m := openTestSpool(t, dir, SpoolConfig{MaxBytes: int64(3*(len(rec)+recordHeader) + 10), SegmentBytes: 1 << 20})
	ins := &scriptedInserter{down: true}
	b := NewSpooledBatcher(ins, sp, BatchConfig{BatchSize: 10, QueueCapacity: 10, FlushEvery: time.Hour}, m, quietLog())
	for i := range 3 {
		if err := b.Add(numbered(10, 10*i), nil); err != nil {
			t.Fatal(err)
		}
	}
	err := b.Add(numbered(10, 30), nil)
	if !errors.Is(err, ErrSpoolFull) || !errors.Is(err, ErrBufferFull) {
		t.Fatalf("Add past -spool-max-bytes: %v, want ErrSpoolFull wrapping ErrBufferFull", err)
	}
	if got := testutil.ToFloat64(m.dropped.WithLabelValues("spool_full")); got != 10 {
		t.Errorf("spool_full counted %v, want 10", got)
	}

	// The disk fills in the middle of a write: the partial record is cut
	// off and the sender told to retry.
	ins.setDown(false)
	if err := b.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	sp.write = func(f *os.File, p []byte) (int, error) {
		n, _ := f.Write(p[:len(p)/2])
		return n, syscall.ENOSPC
	}
	err = b.Add(numbered(10, 30), nil)
	if !errors.Is(err, ErrSpoolFull) || !errors.Is(err, errDiskFull) {
		t.Fatalf("Add on a full disk: %v, want the disk-full error", err)
	}
	if got := testutil.ToFloat64(m.dropped.WithLabelValues("disk_full")); got != 10 {
		t.Errorf("disk_full counted %v, want 10", got)
	}
	sp.write = func(f *os.File, p []byte) (int, error) { return f.Write(p) }
	if err := b.Add(numbered(10, 30), nil); err != nil {
		t.Fatalf("Add after space came back: %v", err)
	}
	sp.closeFiles()
	sp, _ = openTestSpool(t, dir, SpoolConfig{})
	defer sp.Close()
	if got := timeMsOf(readAll(t, sp)); !reflect.DeepEqual(got, timeMsOf(numbered(10, 30))) {
		t.Errorf("spool after the disk-full episode holds %v", got)
	}
}

func TestBatcherDeadLettersCallsClickHouseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name       string
		script     []error
		inserted   int
		deadLetter int
	}{
		{"a type error refuses the whole batch", []error{&proto.Exception{Code: 53, Message: "Type mismatch"}}, 0, 5},
		{"one unconvertible row goes alone", []error{&RowError{Index: 2, Err: errors.New("converting")}}, 4, 1},
		{"too many parts is retried", []error{&proto.Exception{Code: 252, Message: "Too many parts"}}, 5, 0},
		{"a dropped connection is retried", []error{fmt.Errorf("send: %w", syscall.ECONNRESET)}, 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ins := &scriptedInserter{script: tc.script}
			m := NewMetrics(prometheus.NewRegistry())
			b := NewBatcher(ins, BatchConfig{BatchSize: 5, QueueCapacity: 100, FlushEvery: time.Hour, MaxBackoff: time.Millisecond}, m, quietLog())
			if err := b.Add(numbered(5, 0), nil); err != nil {
				t.Fatal(err)
			}
			if err := b.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
			if len(ins.calls) != tc.inserted || len(ins.dead) != tc.deadLetter {
				t.Fatalf("got %d inserted and %d dead letters, want %d and %d", len(ins.calls), len(ins.dead), tc.inserted, tc.deadLetter)
			}
			for _, d := range ins.dead {
				if d.Reason == "" || d.Payload == "" {
					t.Errorf("dead letter without reason or payload: %+v", d)
				}
			}
		})
	}
}

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&proto.Exception{Code: 252}, true},                            // TOO_MANY_PARTS
		{&proto.Exception{Code: 241}, true},                            // MEMORY_LIMIT_EXCEEDED
		{&proto.Exception{Code: 159}, true},                            // TIMEOUT_EXCEEDED
		{&proto.Exception{Code: 209}, true},                            // SOCKET_TIMEOUT
		{&proto.Exception{Code: 210}, true},                            // NETWORK_ERROR
		{&proto.Exception{Code: 242}, true},                            // TABLE_IS_READ_ONLY
		{fmt.Errorf("insert: %w", &proto.Exception{Code: 243}), true},  // NOT_ENOUGH_SPACE, wrapped
		{&proto.Exception{Code: 53}, false},                            // TYPE_MISMATCH
		{&proto.Exception{Code: 16}, false},                            // NO_SUCH_COLUMN_IN_TABLE
		{&proto.Exception{Code: 60}, false},                            // UNKNOWN_TABLE
		{fmt.Errorf("prepare: %w", &proto.Exception{Code: 62}), false}, // SYNTAX_ERROR
		{&RowError{Index: 1, Err: errors.New("converting")}, false},    // driver could not convert a value
		{&os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}, true},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{fmt.Errorf("read: %w", context.DeadlineExceeded), true},
		{errors.New("something new"), true}, // unknown: retried, never dropped on a guess
	} {
		if got := Retryable(tc.err); got != tc.want {
			t.Errorf("Retryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestSpoolFsyncAlwaysSyncsBeforeAddReturns: under -spool-fsync=always,
// concurrent Adds return only once an fsync covered their records.
func TestSpoolFsyncAlwaysSyncsBeforeAddReturns(t *testing.T) {
	sp, m := openTestSpool(t, t.TempDir(), SpoolConfig{Fsync: FsyncAlways})
	defer sp.Close()
	b := NewSpooledBatcher(&scriptedInserter{}, sp, BatchConfig{BatchSize: 1000, QueueCapacity: 100000, FlushEvery: time.Hour}, m, quietLog())
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.Add(numbered(1, i), nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	sp.syncMu.Lock()
	synced := sp.synced
	sp.syncMu.Unlock()
	if synced != sp.Head() {
		t.Errorf("synced %v, head %v: an Add returned before its fsync", synced, sp.Head())
	}
}

// TestOTLPFlushSpoolsHeldSpansWhileClickHouseIsDown: on SIGTERM the spans
// waiting for their other side go to the spool even when the memory queue
// is full and ClickHouse is down, so that they are not lost.
func TestOTLPFlushSpoolsHeldSpansWhileClickHouseIsDown(t *testing.T) {
	sp, m := openTestSpool(t, t.TempDir(), SpoolConfig{})
	defer sp.Close()
	b := NewSpooledBatcher(&scriptedInserter{down: true}, sp, BatchConfig{BatchSize: 1, QueueCapacity: 1, FlushEvery: time.Hour}, m, quietLog())
	if err := b.Add(numbered(1, 0), nil); err != nil { // the memory queue is now full
		t.Fatal(err)
	}
	o := NewOTLP(&Processor{Classifier: classify.Default(), Decode: DecodeOptions{Now: testNow}}, b, m, HTTPConfig{}, OTLPConfig{PairWindow: time.Hour}, quietLog())
	if rejected, msg, err := o.Consume(tracesOf(clientSide)); err != nil || rejected != 0 || o.Held() != 1 {
		t.Fatalf("consume: %d rejected (%s), %v; %d held, want the client span held", rejected, msg, err, o.Held())
	}
	before := sp.Head()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := o.Flush(ctx); err != nil || o.Held() != 0 {
		t.Fatalf("Flush: %v, %d still held", err, o.Held())
	}
	if !before.before(sp.Head()) {
		t.Error("Flush did not append the held span to the spool")
	}
}

// TestDecodeRecordBoundsItsCounts: a record whose call or dead-letter
// count cannot fit in its payload is refused before anything is allocated
// for it, and the smallest records that do fit decode.
func TestDecodeRecordBoundsItsCounts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		record []byte
		ok     bool
	}{
		{"empty", appendRecord(nil, nil, nil, nil), true},
		{"one empty call", appendRecord(nil, []Call{{}}, nil, nil), true},
		{"one empty dead letter", appendRecord(nil, nil, []DeadLetter{{}}, nil), true},
		{"a million calls in 60 bytes", append([]byte{recordVersion, 0xc0, 0x84, 0x3d, 0}, make([]byte, 55)...), false},
		{"two calls in the bytes of one", append([]byte{recordVersion, 2, 0}, appendRecord(nil, []Call{{}}, nil, nil)[3:]...), false},
		{"a thousand dead letters in 100 bytes", append([]byte{recordVersion, 0, 0xe8, 0x07}, make([]byte, 96)...), false},
	} {
		calls, dead, err := decodeRecord(tc.record, nil, nil)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %d calls, %d dead letters, error %v; want ok %v", tc.name, len(calls), len(dead), err, tc.ok)
		}
		if !tc.ok && (cap(calls) > 0 || !errors.Is(err, errBadRecord)) {
			t.Errorf("%s: room for %d calls allocated, error %v", tc.name, cap(calls), err)
		}
	}
}

// TestSpooledBatcherKeepsRecordsInMemoryAcrossSegments appends records that
// rotate the spool's segments every few records while the memory queue has
// room: each stays in memory (none spills to be read back from disk), and
// every call is inserted once, in order.
func TestSpooledBatcherKeepsRecordsInMemoryAcrossSegments(t *testing.T) {
	sp, m := openTestSpool(t, t.TempDir(), SpoolConfig{SegmentBytes: 400})
	ins := &memInserter{}
	b := NewSpooledBatcher(ins, sp, BatchConfig{BatchSize: 1000, QueueCapacity: 1000, FlushEvery: time.Hour}, m, quietLog())
	for i := range 20 {
		if err := b.Add(numbered(3, 3*i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if segs := len(sp.segs); segs < 5 {
		t.Fatalf("%d segments after 20 records of 400-byte segments; want rotations", segs)
	}
	if got := testutil.ToFloat64(m.spilled); got != 0 {
		t.Errorf("%v calls spilled to disk with the queue at 60 of 1000 calls", got)
	}
	if err := b.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := timeMsOf(ins.calls), timeMsOf(numbered(60, 0)); !slices.Equal(got, want) {
		t.Fatalf("inserted %v, want %v", got, want)
	}
	sp.Close()
}
