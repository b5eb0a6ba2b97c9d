package pipeline

import (
	"errors"
	"os"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/mcplens/mcplens/pipeline/classify"
)

// newOTLPSpoolRig is newOTLPRig with an on-disk spool under
// -spool-fsync=always, whose fsync the test controls through sp.fsync.
func newOTLPSpoolRig(t *testing.T, cfg OTLPConfig) (*otlpRig, *Spool) {
	t.Helper()
	sp, m := openTestSpool(t, t.TempDir(), SpoolConfig{Fsync: FsyncAlways})
	t.Cleanup(func() { sp.Close() })
	r := &otlpRig{ins: &memInserter{}, m: m, now: testNow()}
	r.b = NewSpooledBatcher(r.ins, sp, BatchConfig{BatchSize: 1, QueueCapacity: 100, FlushEvery: time.Hour}, m, quietLog())
	p := &Processor{Classifier: classify.Default(), Decode: DecodeOptions{Now: testNow}}
	r.o = NewOTLP(p, r.b, m, HTTPConfig{MaxBodyBytes: 1 << 20, MaxDecompressedBytes: 4 << 20}, cfg, quietLog())
	r.o.now = func() time.Time { return r.now }
	return r, sp
}

// failFsyncs makes the next n fsyncs of sp fail.
func failFsyncs(sp *Spool, n int) {
	var mu sync.Mutex
	sp.fsync = func(f *os.File) error {
		mu.Lock()
		defer mu.Unlock()
		if n > 0 {
			n--
			return errors.New("injected fsync failure")
		}
		return f.Sync()
	}
}

// TestOTLPRetryAfterAFailedFsyncStoresTheRowAgain: a span whose record's
// fsync failed was answered with an error; the exporter's retry must store
// the row again (the first copy may be lost in a crash), not be taken as a
// duplicate of it. Once a retry is durable, the next is a duplicate.
func TestOTLPRetryAfterAFailedFsyncStoresTheRowAgain(t *testing.T) {
	t.Run("a span stored alone", func(t *testing.T) {
		r, sp := newOTLPSpoolRig(t, OTLPConfig{})
		failFsyncs(sp, 1)
		if _, _, err := r.o.Consume(tracesOf(serverSide)); err == nil {
			t.Fatal("the fsync failed but the request was accepted")
		}
		r.send(t, serverSide) // the exporter's retry
		r.send(t, serverSide) // and a retry of a durable row: a duplicate
		rows := r.drain(t)
		if len(rows) != 2 {
			t.Fatalf("%d rows written, want 2 (the failed copy and the retry): %+v", len(rows), rows)
		}
		if f := final(rows); len(f) != 1 {
			t.Fatalf("%d rows after FINAL, want 1", len(f))
		}
	})
	t.Run("a merged row", func(t *testing.T) {
		r, sp := newOTLPSpoolRig(t, OTLPConfig{})
		r.send(t, clientSide)
		failFsyncs(sp, 1)
		if _, _, err := r.o.Consume(tracesOf(serverSide)); err == nil {
			t.Fatal("the fsync failed but the request was accepted")
		}
		r.send(t, serverSide)
		r.send(t, serverSide)
		rows := r.drain(t)
		if len(rows) != 3 {
			t.Fatalf("%d rows written, want 3 (client, merged, merged again): %+v", len(rows), rows)
		}
		f := final(rows)
		if len(f) != 1 {
			t.Fatalf("%d rows after FINAL, want 1", len(f))
		}
		for _, c := range f {
			if c.Side != "both" || c.Category != "RATE_LIMITED" {
				t.Errorf("surviving row: side %s, %s; want the merged row", c.Side, c.Category)
			}
		}
	})
}

// blockFsync makes sp's next fsync wait until the returned release is
// called; entered is closed when that fsync starts.
func blockFsync(sp *Spool) (entered <-chan struct{}, release func()) {
	in, out := make(chan struct{}), make(chan struct{})
	var once sync.Once
	sp.fsync = func(f *os.File) error {
		first := false
		once.Do(func() { first = true })
		if first {
			close(in)
			<-out
		}
		return f.Sync()
	}
	var rel sync.Once
	return in, func() { rel.Do(func() { close(out) }) }
}

// TestOTLPLinkedRequestsShareTheSpoolFsync: while one request's fsync is
// in progress, another request's linkable spans are queued (neither the
// pairer's lock nor a builder's place is held across an fsync), and both
// are answered once durable.
func TestOTLPLinkedRequestsShareTheSpoolFsync(t *testing.T) {
	r, sp := newOTLPSpoolRig(t, OTLPConfig{})
	r.o.builders = make(chan struct{}, 1) // one builder: the first request must give it up before its fsync
	entered, release := blockFsync(sp)
	defer release()
	other := serverSide
	other.trace, other.span, other.parent = 5, 6, 4
	errs := make(chan error, 2)
	go func() { _, _, err := r.o.Consume(tracesOf(serverSide)); errs <- err }()
	<-entered
	go func() { _, _, err := r.o.Consume(tracesOf(other)); errs <- err }()
	for deadline := time.Now().Add(10 * time.Second); r.b.Queued() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued while the first request's fsync ran, want 2: the second request waited for it", r.b.Queued())
		}
	}
	release()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if rows := r.drain(t); len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
}

// TestOTLPDuplicateWaitsForTheRecordItFinds: a retry that finds its span
// already stored is answered only once the record holding that row is
// durable, not while the first request's fsync is still running.
func TestOTLPDuplicateWaitsForTheRecordItFinds(t *testing.T) {
	r, sp := newOTLPSpoolRig(t, OTLPConfig{})
	entered, release := blockFsync(sp)
	defer release()
	first, retry := make(chan error, 1), make(chan error, 1)
	go func() { _, _, err := r.o.Consume(tracesOf(serverSide)); first <- err }()
	<-entered
	go func() { _, _, err := r.o.Consume(tracesOf(serverSide)); retry <- err }()
	select {
	case err := <-retry:
		t.Fatalf("the retry was answered (%v) before the row it duplicates was durable", err)
	case <-time.After(200 * time.Millisecond):
	}
	release()
	for _, ch := range []chan error{first, retry} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if rows := r.drain(t); len(rows) != 1 {
		t.Fatalf("%d rows, want 1 (the retry is a duplicate)", len(rows))
	}
}

// TestOTLPBuildersAreBounded: a request waits for a builder's place before
// it builds and queues its rows, so that no more requests than builders
// hold built rows at once.
func TestOTLPBuildersAreBounded(t *testing.T) {
	r := newOTLPRig(t, OTLPConfig{}, 100)
	r.o.builders = make(chan struct{}, 1)
	r.o.builders <- struct{}{} // the one place is taken
	errs := make(chan error, 1)
	go func() { _, _, err := r.o.Consume(tracesOf(serverSide)); errs <- err }()
	select {
	case err := <-errs:
		t.Fatalf("the request was served (%v) with no builder's place free", err)
	case <-time.After(200 * time.Millisecond):
	}
	if n := r.b.Queued(); n != 0 {
		t.Fatalf("%d calls queued with no builder's place free", n)
	}
	<-r.o.builders
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if n := r.b.Queued(); n != 1 {
		t.Fatalf("%d calls queued, want 1", n)
	}
	if len(r.o.builders) != 0 {
		t.Fatalf("the request kept its builder's place")
	}
}

// TestDetachCopiesEveryStringOnce: detached facts keep their values when
// the body they viewed is overwritten, and cost one allocation for the
// strings (plus the texts slice).
func TestDetachCopiesEveryStringOnce(t *testing.T) {
	body := []byte("tools/call qacmekbsearch_docss9conv1agent2025-06-183{\"q\":\"x\"}lostboomresultRate limitmore")
	v := func(a, b int) string { return unsafe.String(&body[a], b-a) }
	f := func() spanFacts {
		return spanFacts{name: v(0, 12), tenant: v(12, 16), server: v(16, 18), tool: v(18, 29), session: v(29, 31),
			conv: v(31, 36), client: v(36, 41), proto: v(41, 51), reqID: v(51, 52), args: v(52, 61),
			localErr: v(61, 65), rpcMsg: v(65, 69), result: v(69, 75), texts: []string{v(75, 85), "", v(85, 89)}}
	}
	got := f()
	got.detach()
	saved := append([]byte(nil), body...)
	for i := range body {
		body[i] = '#'
	}
	wantVals := []string{"tools/call q", "acme", "kb", "search_docs", "s9", "conv1", "agent", "2025-06-18", "3",
		`{"q":"x"}`, "lost", "boom", "result", "Rate limit", "", "more"}
	gotVals := []string{got.name, got.tenant, got.server, got.tool, got.session, got.conv, got.client, got.proto, got.reqID,
		got.args, got.localErr, got.rpcMsg, got.result, got.texts[0], got.texts[1], got.texts[2]}
	for i := range wantVals {
		if gotVals[i] != wantVals[i] {
			t.Errorf("field %d after the body changed: %q, want %q", i, gotVals[i], wantVals[i])
		}
	}
	copy(body, saved)
	if n := testing.AllocsPerRun(100, func() { g := f(); g.detach() }); n > 2+1 { // +1: f's texts literal
		t.Errorf("detach: %.0f allocations, want 2 (the strings' buffer and the texts)", n)
	}
}
