package pipeline

import (
	"errors"
	"fmt"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/mcplens/mcplens/auth"
)

// fullFacts returns span facts with every field set to a value that is not
// its zero; a field it does not know fails t, so that a field added to
// spanFacts without a line in appendFacts fails the round trip.
func fullFacts(t testing.TB, seed int) spanFacts {
	t.Helper()
	var f spanFacts
	var fill func(v reflect.Value, name string)
	n := seed * 100
	fill = func(v reflect.Value, name string) {
		n++
		v = reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem() // unexported fields too
		switch v.Kind() {
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				fill(v.Field(i), v.Type().Field(i).Name)
			}
		case reflect.String:
			if name == "side" {
				v.SetString(sideServer)
				return
			}
			v.SetString(fmt.Sprintf("%s-%d-é", name, n))
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int8, reflect.Int32, reflect.Int64:
			v.SetInt(int64(-n))
		case reflect.Uint8:
			v.SetUint(uint64(n))
		case reflect.Array:
			for i := 0; i < v.Len(); i++ {
				v.Index(i).SetUint(uint64(n + i))
			}
		case reflect.Slice:
			switch v.Type().Elem() {
			case reflect.TypeOf(""):
				v.Set(reflect.ValueOf([]string{fmt.Sprint("a", n), "", fmt.Sprint("b", n)}))
			case reflect.TypeOf(pcommon.SpanID{}):
				v.Set(reflect.ValueOf([]pcommon.SpanID{{1, 2, 3, byte(n)}, {9, byte(n)}}))
			default:
				t.Fatalf("fullFacts: field %s is a slice of %s; teach fullFacts and appendFacts about it", name, v.Type().Elem())
			}
		default:
			t.Fatalf("fullFacts: field %s has kind %s; teach fullFacts and appendFacts about it", name, v.Kind())
		}
	}
	fill(reflect.ValueOf(&f).Elem(), "")
	return f
}

func TestPairLogRecordRoundTripsEveryField(t *testing.T) {
	f := fullFacts(t, 1)
	row := fullCall(t, 2)
	id := identityOf(&row)
	keys := []linkKey{makeLinkKey(f.trace, f.span), makeLinkKey(f.trace, f.parent)}
	ops := []pairOp{
		{op: opHold, seq: 7, due: 1780000010000, keys: keys, f: &f},
		{op: opHold, seq: 1 << 40, due: -5, f: &spanFacts{side: sideClient}},
		{op: opMerge, seq: 7, row: &row},
		{op: opResolve, seq: 300},
		{op: opKeep, due: 1780000900000, keys: keys, f: &f, id: &id, merged: true},
		{op: opKeep, due: 1, f: &spanFacts{side: sideBoth}, id: &identity{}},
	}
	var b []byte
	b = append(b, pairLogVersion, pairOps, byte(len(ops)))
	for i := range ops {
		b = appendPairOp(b, &ops[i])
	}
	undo, got, err := decodePairRecord(b)
	if err != nil || undo {
		t.Fatalf("decode: undo %v, %v", undo, err)
	}
	if len(got) != len(ops) {
		t.Fatalf("%d operations decoded, want %d", len(got), len(ops))
	}
	for i := range ops {
		w, g := ops[i], got[i]
		if !reflect.DeepEqual(w, g) {
			t.Errorf("operation %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	if got[0].f.side != sideServer || &got[0].f.side == &f.side {
		t.Errorf("side %q", got[0].f.side)
	}
	if undo, ops, err := decodePairRecord([]byte{pairLogVersion, pairUndo}); err != nil || !undo || ops != nil {
		t.Errorf("undo record: %v %v %v", undo, ops, err)
	}
	for _, bad := range [][]byte{nil, {9, pairOps, 0}, {pairLogVersion, 9}, {pairLogVersion, pairUndo, 0},
		{pairLogVersion, pairOps, 1, 9, 1}, {pairLogVersion, pairOps, 1, opKeep, 1}, b[:len(b)-1], append(append([]byte(nil), b...), 0)} {
		if _, _, err := decodePairRecord(bad); !errors.Is(err, errBadPairRecord) && !errors.Is(err, errBadRecord) {
			t.Errorf("decode %x: %v, want a malformed record", bad, err)
		}
	}
}

// FuzzDecodePairRecord: no input panics the pair log's decoder, and what it
// decodes encodes to a record that decodes to the same operations.
func FuzzDecodePairRecord(f *testing.F) {
	fa := fullFacts(f, 1)
	row := fullCall(f, 3)
	id := identityOf(&row)
	for _, ops := range [][]pairOp{
		{{op: opHold, seq: 1, due: 99, keys: []linkKey{{1}}, f: &fa}},
		{{op: opMerge, seq: 2, row: &row}, {op: opResolve, seq: 1}},
		{{op: opKeep, due: 1234, keys: []linkKey{{2}, {3}}, f: &fa, id: &id, merged: true}, {op: opKeep, due: 5, f: &fa, id: &id}},
	} {
		b := []byte{pairLogVersion, pairOps, byte(len(ops))}
		for i := range ops {
			b = appendPairOp(b, &ops[i])
		}
		f.Add(b)
	}
	f.Add([]byte{pairLogVersion, pairUndo})
	f.Fuzz(func(t *testing.T, b []byte) {
		undo, ops, err := decodePairRecord(b)
		if err != nil || undo {
			return
		}
		again := []byte{pairLogVersion, pairOps}
		again = appendUvarintBytes(again, len(ops))
		for i := range ops {
			again = appendPairOp(again, &ops[i])
		}
		_, ops2, err := decodePairRecord(again)
		if err != nil {
			t.Fatalf("re-encoded record: %v", err)
		}
		if !reflect.DeepEqual(ops, ops2) {
			t.Fatalf("round trip changed the operations:\n%+v\n%+v", ops, ops2)
		}
	})
}

func appendUvarintBytes(b []byte, n int) []byte {
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(b, byte(n))
}

// TestOTLPHeldSpansSurviveACrash: with a pair window, a span held for its
// other side was acknowledged; a crash (no Flush) must not lose it, nor
// count its call twice.
func TestOTLPHeldSpansSurviveACrash(t *testing.T) {
	cfg := OTLPConfig{PairWindow: 10 * time.Second}
	t.Run("held, then its other side after the restart", func(t *testing.T) {
		r, sp := newOTLPSpoolRig(t, cfg)
		r.send(t, serverSide)
		if r.o.Held() != 1 {
			t.Fatalf("%d held, want 1", r.o.Held())
		}
		r, _ = crashOTLP(t, r, sp, cfg)
		if r.o.Held() != 1 {
			t.Fatalf("after the restart %d held, want the server span", r.o.Held())
		}
		r.send(t, clientSide)
		rows := r.drain(t)
		// The row a process without a crash writes.
		w, _ := newOTLPSpoolRig(t, cfg)
		w.send(t, serverSide)
		w.send(t, clientSide)
		want := w.drain(t)
		if len(rows) != 1 || len(want) != 1 || rowKey(rows[0]) != rowKey(want[0]) || rows[0].Side != sideBoth || rows[0].Category != "RATE_LIMITED" {
			t.Fatalf("rows %+v; want one merged row, %+v", rows, want)
		}
	})
	t.Run("its window passed while the process was down", func(t *testing.T) {
		r, sp := newOTLPSpoolRig(t, cfg)
		r.send(t, serverSide)
		r, _ = crashOTLP(t, r, sp, cfg)
		r.now = r.now.Add(time.Minute)
		r.o.release(false)
		if r.o.Held() != 0 {
			t.Fatalf("%d held after the window", r.o.Held())
		}
		rows := r.drain(t)
		if len(rows) != 1 || rows[0].Side != sideServer {
			t.Fatalf("rows %+v; want the server span alone", rows)
		}
	})
	t.Run("merged before the crash: one row", func(t *testing.T) {
		r, sp := newOTLPSpoolRig(t, cfg)
		r.send(t, serverSide)
		r.send(t, clientSide)
		r, _ = crashOTLP(t, r, sp, cfg)
		if r.o.Held() != 0 {
			t.Fatalf("%d held after the restart; the merge resolved the hold", r.o.Held())
		}
		r.o.release(true)
		rows := final(r.drain(t))
		if len(rows) != 1 {
			t.Fatalf("%d rows under FINAL, want the merged one: %+v", len(rows), rows)
		}
		for _, c := range rows {
			if c.Side != sideBoth {
				t.Fatalf("row %+v, want the merged row", c)
			}
		}
	})
	t.Run("an inner span folded into the hold", func(t *testing.T) {
		r, sp := newOTLPSpoolRig(t, cfg)
		inner := clientSide // an MCP client span under the held one (a GenAI execute_tool span's place)
		inner.span, inner.parent, inner.startMs = 3, 1, 5001
		r.send(t, clientSide)
		held := r.o.pair.held[0]
		before := held.logEnd
		r.send(t, inner)
		if held.state != entryHeld || !before.before(held.logEnd) || !held.p.unpack().folded {
			t.Fatalf("the inner span did not fold into the hold (state %d)", held.state)
		}
		r, _ = crashOTLP(t, r, sp, cfg)
		if r.o.Held() != 1 {
			t.Fatalf("%d held after the restart, want 1", r.o.Held())
		}
		f := r.o.pair.held[0].p.unpack()
		if !f.folded {
			t.Fatal("the recovered hold lost its folded inner span")
		}
	})
	t.Run("a refused request's holds are undone", func(t *testing.T) {
		r, sp := newOTLPSpoolRig(t, cfg)
		root := serverSide // no parent: stored at once, so the request queues a row
		root.trace, root.span, root.parent = 4, 5, 0
		sp.mu.Lock()
		sp.cfg.MaxBytes = 1 // the queue refuses every row
		sp.mu.Unlock()
		if _, _, err := r.o.Consume(tracesOf(serverSide, root)); !errors.Is(err, ErrBufferFull) {
			t.Fatalf("consume: %v, want a full spool", err)
		}
		if r.o.Held() != 0 {
			t.Fatalf("%d held after a refused request", r.o.Held())
		}
		sp.mu.Lock()
		sp.cfg.MaxBytes = 1 << 30 // the next process has room
		sp.mu.Unlock()
		r, _ = crashOTLP(t, r, sp, cfg)
		if r.o.Held() != 0 {
			t.Fatalf("%d held after the restart: the refused request's hold came back", r.o.Held())
		}
	})
	t.Run("a merge whose row the spool lost is queued from the log", func(t *testing.T) {
		dir := t.TempDir()
		r, sp := newOTLPSpoolRigOn(t, dir, &memInserter{}, cfg)
		row := fullCall(t, 4)
		f := fullFacts(t, 5)
		r.o.pair.mu.Lock()
		l := r.o.pair.log
		_, _, err := l.append([]pairOp{{op: opHold, seq: l.next(), due: 1, keys: []linkKey{{1}}, f: &f}})
		if err == nil {
			_, _, err = l.append([]pairOp{{op: opMerge, seq: l.seq, row: &row}})
		}
		r.o.pair.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		r, _ = crashOTLP(t, r, sp, cfg) // as if between the log's record and the queue
		if r.o.Held() != 0 {
			t.Fatalf("%d held", r.o.Held())
		}
		rows := r.drain(t)
		if len(rows) != 1 || !reflect.DeepEqual(rows[0], row) {
			t.Fatalf("rows %+v, want the logged merge's row", rows)
		}
	})
	t.Run("merged rows recovered while the spool is full are queued once it has room", func(t *testing.T) {
		dir := t.TempDir()
		r, sp := newOTLPSpoolRigWith(t, dir, &memInserter{}, cfg, SpoolConfig{Fsync: FsyncAlways, MaxBytes: 64 << 10})
		r.send(t, serverSide)
		r.send(t, clientSide) // merged: its record carries the row
		// The spool fills up while ClickHouse is away.
		for {
			if _, _, err := sp.Append(appendRecord(nil, numbered(1, 100), nil, nil)); err != nil {
				break
			}
		}
		r, _ = crashOTLP(t, r, sp, cfg)
		l := r.o.pair.log
		if len(l.replayed) != 1 {
			t.Fatalf("%d recovered rows waiting, want the merged row (the spool is full)", len(l.replayed))
		}
		committed := l.sp.Committed()
		if r.o.release(false) || l.sp.Committed() != committed {
			t.Fatal("a release with the recovered row still waiting reported done or moved the checkpoint")
		}
		if err := r.b.Drain(t.Context()); err != nil { // ClickHouse is back: the spool empties
			t.Fatal(err)
		}
		if !r.o.release(false) || len(l.replayed) != 0 {
			t.Fatalf("after the drain %d recovered rows still wait", len(l.replayed))
		}
		merged := 0
		for _, c := range r.drain(t) {
			if c.Side == sideBoth {
				merged++
			}
		}
		if merged == 0 {
			t.Fatal("the recovered merged row was never stored")
		}
	})
	t.Run("a record this build cannot read is skipped", func(t *testing.T) {
		r, sp := newOTLPSpoolRig(t, cfg)
		if _, _, err := r.o.pair.log.sp.Append([]byte{pairLogVersion + 1, pairOps}); err != nil {
			t.Fatal(err)
		}
		r.send(t, serverSide)
		r, _ = crashOTLP(t, r, sp, cfg)
		if r.o.Held() != 1 {
			t.Fatalf("%d held after the restart, want the hold after the unreadable record", r.o.Held())
		}
	})
	t.Run("two crashes, the later hold due first", func(t *testing.T) {
		r, sp := newOTLPSpoolRig(t, cfg)
		base := r.now
		r.now = base.Add(5 * time.Second)
		r.send(t, serverSide) // held until base+15s
		r.now = base          // a request whose clock read earlier, logged after
		other := serverSide
		other.trace = 5
		r.send(t, other) // held until base+10s
		r, sp = crashOTLP(t, r, sp, cfg)
		r.o.release(false) // nothing due: the checkpoint moves to the oldest hold's record
		r, _ = crashOTLP(t, r, sp, cfg)
		if r.o.Held() != 2 {
			t.Fatalf("%d held after the second restart, want both", r.o.Held())
		}
	})
	t.Run("a clean shutdown leaves no log", func(t *testing.T) {
		// Nothing remembered: no span, or the memory passed.
		for _, spans := range [][]testSpan{nil, {serverSide}} {
			dir := t.TempDir()
			ins := &memInserter{}
			r, sp := newOTLPSpoolRigOn(t, dir, ins, cfg)
			if len(spans) > 0 {
				r.send(t, spans...)
				if err := r.o.Flush(t.Context()); err != nil {
					t.Fatal(err)
				}
				r.now = r.now.Add(pairMemory + time.Second)
			}
			if err := r.o.ClosePairLog(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(pairLogDir(dir, "open")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%d spans: the pair log's directory after a clean close: %v", len(spans), err)
			}
			r.drain(t)
			if err := sp.Close(); err != nil {
				t.Fatal(err)
			}
			r, _ = newOTLPSpoolRigOn(t, dir, ins, cfg)
			if r.o.Held() != 0 {
				t.Fatalf("%d held after a clean restart", r.o.Held())
			}
			if rows := r.drain(t); len(rows) != len(spans) {
				t.Fatalf("%d rows, want the server span's once", len(rows))
			}
		}
	})
	t.Run("a clean restart remembers the rows stored", func(t *testing.T) {
		// A deploy: SIGTERM stores the held server span alone and writes
		// what the pairer remembers; the next start remembers it again,
		// and the client side posted after the restart replaces its row,
		// and a copy of the server side is a duplicate. Before, the client
		// side was stored as a second row of the call.
		for _, window := range []time.Duration{0, 10 * time.Second} {
			cfg := OTLPConfig{PairWindow: window}
			r, sp := newOTLPSpoolRig(t, cfg)
			r.send(t, serverSide)
			r, sp = cleanRestartOTLP(t, r, sp, cfg)
			if _, err := os.Stat(pairLogDir(sp.dir, "open")); err != nil {
				t.Fatalf("window %v: the pair log after the restart: %v", window, err)
			}
			if got := testutil.ToFloat64(r.m.pairRecovered.WithLabelValues("remembered")); got != 1 {
				t.Errorf("window %v: remembered rows recovered %v, want 1", window, got)
			}
			if held, kept := r.o.pair.counts(); held != 0 || kept != 1 {
				t.Fatalf("window %v: %d held and %d remembered after the restart, want 0 and 1", window, held, kept)
			}
			r.send(t, clientSide)
			r.send(t, serverSide)
			r, sp = cleanRestartOTLP(t, r, sp, cfg) // the merged row, remembered as merged
			r.send(t, clientSide)
			r.o.release(true)
			rows := final(r.drain(t))
			if len(rows) != 1 {
				t.Fatalf("window %v: %d rows under FINAL, want 1: %+v", window, len(rows), rows)
			}
			for _, c := range rows {
				if c.Side != "both" || c.DurationMs != 420 || c.Category != "RATE_LIMITED" {
					t.Errorf("window %v: row %+v", window, c)
				}
			}
			// Its memory passes while the process is down: forgotten.
			r.now = r.now.Add(pairMemory)
			r, _ = cleanRestartOTLP(t, r, sp, cfg)
			if held, kept := r.o.pair.counts(); held != 0 || kept != 0 {
				t.Fatalf("window %v: %d held and %d remembered after the memory passed", window, held, kept)
			}
		}
	})
	t.Run("a hold is answered once durable", func(t *testing.T) {
		r, _ := newOTLPSpoolRig(t, cfg)
		failFsyncs(r.o.pair.log.sp, 1)
		if _, _, err := r.o.Consume(tracesOf(serverSide)); err == nil {
			t.Fatal("the pair log's fsync failed but the request was accepted")
		}
		synced := r.o.pair.log.sp.synced
		r.send(t, serverSide) // the exporter's retry: the hold's fsync again
		if !synced.before(r.o.pair.log.sp.synced) {
			t.Fatalf("the retry of a held span was answered without its hold's fsync (synced at %+v)", synced)
		}
	})
	t.Run("the checkpoint follows the oldest hold", func(t *testing.T) {
		r, _ := newOTLPSpoolRig(t, cfg)
		l := r.o.pair.log.sp
		r.send(t, serverSide)
		first := l.Head()
		r.now = r.now.Add(time.Second)
		other := serverSide
		other.trace = 5
		r.send(t, other)
		r.now = r.now.Add(9500 * time.Millisecond) // the first hold's window passed, not the second's
		r.o.release(false)
		if c := l.Committed(); c.before(first) || !c.before(l.Head()) || r.o.Held() != 1 {
			t.Fatalf("checkpoint %+v with the first hold ending at %+v, head %+v, %d held", c, first, l.Head(), r.o.Held())
		}
		r.now = r.now.Add(time.Second)
		r.o.release(false)
		if l.Committed() != l.Head() {
			t.Fatalf("checkpoint %+v, head %+v: nothing is held", l.Committed(), l.Head())
		}
	})
}

func TestReceiversKeepAPairLogPerToken(t *testing.T) {
	tokens, err := auth.Parse("test", []byte(receiverTokens))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sp, m := openTestSpool(t, dir, SpoolConfig{Fsync: FsyncAlways})
	t.Cleanup(func() { sp.Close() })
	b := NewSpooledBatcher(&memInserter{}, sp, BatchConfig{BatchSize: 1, QueueCapacity: 100, FlushEvery: time.Hour}, m, quietLog())
	if err := os.MkdirAll(pairLogDir(dir, "token-gone"), 0o750); err != nil {
		t.Fatal(err)
	}
	r := NewReceivers(&Processor{}, b, m, ReceiversConfig{Tokens: tokens, OTLP: OTLPConfig{PairWindow: time.Second}}, quietLog())
	if err := r.OpenPairLogs(); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, rc := range r.all {
		if _, err := os.Stat(filepath.Join(pairLogDir(dir, rc.name), lockName)); err != nil {
			t.Errorf("receiver %s: %v", rc.name, err)
		}
		names[rc.name] = true
	}
	if len(names) != len(r.all) || len(r.all) < 2 {
		t.Fatalf("%d receivers, %d pair log names", len(r.all), len(names))
	}
	if err := r.ClosePairLogs(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "pairs"))
	if len(entries) != 1 || entries[0].Name() != "token-gone" {
		t.Fatalf("after a clean close the pairs directory holds %v, want the unconfigured receiver's log only", entries)
	}
}
