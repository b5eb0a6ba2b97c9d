package pipeline

import (
	"errors"
	"os"
	"reflect"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/mcplens/mcplens/pipeline/classify"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// newOTLPSpoolRig is newOTLPRig with an on-disk spool under
// -spool-fsync=always, whose fsync the test controls through sp.fsync.
func newOTLPSpoolRig(t *testing.T, cfg OTLPConfig) (*otlpRig, *Spool) {
	t.Helper()
	return newOTLPSpoolRigOn(t, t.TempDir(), &memInserter{}, cfg)
}

// newOTLPSpoolRigOn is newOTLPSpoolRig on the spool in dir, inserting into
// ins: a restart of the ingest process on the spool a crash left, with
// ClickHouse as it was.
func newOTLPSpoolRigOn(t *testing.T, dir string, ins *memInserter, cfg OTLPConfig) (*otlpRig, *Spool) {
	t.Helper()
	return newOTLPSpoolRigWith(t, dir, ins, cfg, SpoolConfig{Fsync: FsyncAlways})
}

// newOTLPSpoolRigWith is newOTLPSpoolRigOn with the spool configured by scfg.
func newOTLPSpoolRigWith(t *testing.T, dir string, ins *memInserter, cfg OTLPConfig, scfg SpoolConfig) (*otlpRig, *Spool) {
	t.Helper()
	return newOTLPSpoolRigAt(t, dir, ins, cfg, scfg, testNow())
}

// newOTLPSpoolRigAt is newOTLPSpoolRigWith with its clock at now from the
// start (the pair log is read at now).
func newOTLPSpoolRigAt(t *testing.T, dir string, ins *memInserter, cfg OTLPConfig, scfg SpoolConfig, now time.Time) (*otlpRig, *Spool) {
	t.Helper()
	sp, m := openTestSpool(t, dir, scfg)
	t.Cleanup(func() { sp.Close() })
	r := &otlpRig{ins: ins, m: m, now: now}
	r.b = NewSpooledBatcher(r.ins, sp, BatchConfig{BatchSize: 1, QueueCapacity: 100, FlushEvery: time.Hour}, m, quietLog())
	p := &Processor{Classifier: classify.Default(), Decode: DecodeOptions{Now: testNow}}
	r.o = NewOTLP(p, r.b, m, HTTPConfig{MaxBodyBytes: 1 << 20, MaxDecompressedBytes: 4 << 20}, cfg, quietLog())
	r.o.now = func() time.Time { return r.now }
	if err := r.o.OpenPairLog("open"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.o.ClosePairLog() }) // before the spool's Close
	return r, sp
}

// crashOTLP ends the process of r as SIGKILL does and starts it again on
// its spool and pair log, with the clock where it was: the pairer's memory
// is gone, ClickHouse (r.ins) keeps its rows.
func crashOTLP(t *testing.T, r *otlpRig, sp *Spool, cfg OTLPConfig) (*otlpRig, *Spool) {
	return restartOTLP(t, r, sp, cfg, false)
}

// restartOTLP is crashOTLP, or with powerLoss a power loss under
// -spool-fsync=always: what the spool and the pair log had not fsynced is
// gone too.
func restartOTLP(t *testing.T, r *otlpRig, sp *Spool, cfg OTLPConfig, powerLoss bool) (*otlpRig, *Spool) {
	t.Helper()
	for _, s := range []*Spool{sp, r.o.pair.log.sp} {
		if powerLoss {
			losePower(t, s)
		} else {
			s.closeFiles()
		}
		s.mu.Lock()
		s.closed = true // its cleanup's Close must not write a checkpoint
		s.mu.Unlock()
	}
	r.o.pair.log = nil
	sp.mu.Lock()
	scfg := sp.cfg // the next process is configured as this one
	sp.mu.Unlock()
	return newOTLPSpoolRigAt(t, sp.dir, r.ins, cfg, scfg, r.now)
}

// cleanRestartOTLP ends the process of r as SIGTERM does (every held span
// stored alone, the pair log closed, which writes the rows remembered, the
// queue drained into ClickHouse, the spool closed) and starts it again on
// its spool and pair log, with the clock where it was.
func cleanRestartOTLP(t *testing.T, r *otlpRig, sp *Spool, cfg OTLPConfig) (*otlpRig, *Spool) {
	t.Helper()
	for !r.o.release(true) {
		r.drain(t) // the queue is full: ClickHouse takes it
	}
	if err := r.o.ClosePairLog(); err != nil {
		t.Fatalf("close the pair log: %v", err)
	}
	r.drain(t)
	sp.mu.Lock()
	scfg := sp.cfg
	sp.mu.Unlock()
	if err := sp.Close(); err != nil {
		t.Fatalf("close the spool: %v", err)
	}
	return newOTLPSpoolRigAt(t, sp.dir, r.ins, cfg, scfg, r.now)
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

// TestPackFactsCopiesEveryStringOnce: packed facts keep their values when
// the body they viewed is overwritten, unpack to the facts packed, and cost
// one allocation for the strings (plus the texts slice).
func TestPackFactsCopiesEveryStringOnce(t *testing.T) {
	body := []byte("tools/call qacmekbsearch_docss9conv1agent2025-06-183{\"q\":\"x\"}lostboomresultRate limitmore")
	v := func(a, b int) string { return unsafe.String(&body[a], b-a) }
	f := func() spanFacts {
		return spanFacts{spanScalars: spanScalars{index: 3, trace: pcommon.TraceID{1}, span: pcommon.SpanID{2},
			parent: pcommon.SpanID{3}, timeMs: 5, durMs: 6, tenantSet: true, argsKind: argsJSON, info: 2, rpcErr: true,
			rpcCode: -32000, isError: 1, blocks: 2},
			name: v(0, 12), side: sideClient, links: []pcommon.SpanID{{4}}, tenant: v(12, 16), server: v(16, 18),
			tool: v(18, 29), session: v(29, 31), conv: v(31, 36), client: v(36, 41), proto: v(41, 51), reqID: v(51, 52),
			args: v(52, 61), localErr: v(61, 65), rpcMsg: v(65, 69), result: v(69, 75), texts: []string{v(75, 85), "", v(85, 89)}}
	}
	want := f()
	want.name, want.tenant, want.server, want.tool, want.session, want.conv, want.client, want.proto, want.reqID, want.args,
		want.localErr, want.rpcMsg, want.result, want.texts = "tools/call q", "acme", "kb", "search_docs", "s9", "conv1",
		"agent", "2025-06-18", "3", `{"q":"x"}`, "lost", "boom", "result", []string{"Rate limit", "", "more"}
	g := f()
	p := pack(&g)
	saved := append([]byte(nil), body...)
	for i := range body {
		body[i] = '#'
	}
	if got := p.unpack(); !reflect.DeepEqual(got, want) {
		t.Errorf("after the body changed, unpacked\n%+v\nwant\n%+v", got, want)
	}
	copy(body, saved)
	if n := testing.AllocsPerRun(100, func() { g := f(); p := pack(&g); _ = p.unpack() }); n > 2+2 { // +2: f's texts and links literals
		t.Errorf("packFacts and unpack: %.0f allocations, want 2 (the strings' buffer and the texts)", n)
	}
}

// TestPackedFactsCoverEveryField: every string of spanFacts but side is
// one strs packs, so a string field added later cannot be kept as a view
// of the request, and spanScalars, which the pairer keeps as it is, holds
// no pointer, so that marking an entry stays cheap.
func TestPackedFactsCoverEveryField(t *testing.T) {
	var f spanFacts
	packed := map[*string]bool{}
	for _, s := range f.strs() {
		packed[s] = true
	}
	v := reflect.ValueOf(&f).Elem()
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		switch {
		case sf.Anonymous:
			if sf.Type != reflect.TypeOf(spanScalars{}) {
				t.Errorf("embedded %s", sf.Type)
			}
		case sf.Type.Kind() == reflect.String:
			if p := (*string)(v.Field(i).Addr().UnsafePointer()); !packed[p] && sf.Name != "side" {
				t.Errorf("spanFacts.%s is not among the strings packFacts copies", sf.Name)
			}
		case sf.Name != "links" && sf.Name != "texts":
			t.Errorf("spanFacts.%s (%s) is neither packed nor a scalar", sf.Name, sf.Type)
		}
	}
	var pointerFree func(reflect.Type) bool
	pointerFree = func(ty reflect.Type) bool {
		switch ty.Kind() {
		case reflect.Struct:
			for i := range ty.NumField() {
				if !pointerFree(ty.Field(i).Type) {
					return false
				}
			}
			return true
		case reflect.Array:
			return pointerFree(ty.Elem())
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			return true
		}
		return false
	}
	if !pointerFree(reflect.TypeOf(spanScalars{})) {
		t.Errorf("spanScalars holds a pointer")
	}
}
