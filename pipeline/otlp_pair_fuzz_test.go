package pipeline

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// FuzzOTLPPairer drives the OTLP receiver's pairer, across requests, with
// spans of a small universe (two traces, eight span ids, client, server and
// inner spans of two tools), sent in requests, sent again (an exporter's
// retry) and spaced by clock moves, under a pair window or none, a byte
// budget wide or tight, and a spool whose fsyncs the program fails,
// crashes of the process and power losses (with the spool and the pair
// log) and clean restarts, or no spool. The first byte picks the configuration; each pair of
// bytes after it is one step (pairerProgram). No sequence may panic or
// fail a request but by an injected fsync failure, and after every request
// the pairer's books must agree with its entries (checkPairerBooks). At
// the end, once every held span is released and every remembered row's
// memory has passed, nothing is held or remembered, every written row is
// valid, FINAL has at most one row per span sent in each life of the
// process (a restart forgets the rows stored before it: a span sent again
// after it may add one, docs/otel.md), and every client and server span
// of a request answered without error has a row (of its trace and side),
// held or not, crashes or not. Where nothing was forgotten (no crash, no
// failed fsync, the wide budget, less than the pair memory passed, no two
// spans with one id) and pairerCalls can count the calls, FINAL has at
// most one row per call.
func FuzzOTLPPairer(f *testing.F) {
	// Seeds: the two sides in one request; in two requests, server first;
	// a late server side sent twice after the window; a server span with an
	// inner span, retried, then its client under a tight budget; two calls
	// whose second server side comes 255 s late; with the spool, a server
	// span whose fsync fails, sent again, then its client, sent twice with a
	// failed fsync; with the spool, a server span and a crash, its client
	// sent twice and a crash, the server span again; a server span and
	// another call's client in one request, then a crash.
	f.Add([]byte{0, 0x00, 0x02, 0x08, 0x14, 0x05, 0})
	f.Add([]byte{1, 0x08, 0x14, 0x05, 0, 0x00, 0x02, 0x05, 0})
	f.Add([]byte{1, 0x00, 0x02, 0x05, 0, 0x06, 30, 0x08, 0x94, 0x07, 0})
	f.Add([]byte{2, 0x08, 0x14, 0x10, 0x26, 0x07, 0, 0x00, 0x02, 0x05, 0})
	f.Add([]byte{3, 0x00, 0x02, 0x08, 0x14, 0x00, 0x08, 0x05, 0, 0x06, 255, 0x08, 0x4a, 0x05, 0})
	f.Add([]byte{4, 0x08, 0x14, 0x0d, 0, 0x08, 0x14, 0x05, 0, 0x00, 0x02, 0x0f, 0})
	f.Add([]byte{4, 0x08, 0x14, 0x15, 0, 0x00, 0x02, 0x17, 0, 0x08, 0x14, 0x05, 0})
	f.Add([]byte{4, 0x08, 0x14, 0x00, 0x22, 0x15, 0})
	// With a window and the spool: a held server span and a crash; a held
	// server span, its client (merged) and a crash; a held server span,
	// its inner span (folded into the hold) and a crash.
	f.Add([]byte{5, 0x08, 0x14, 0x15, 0})
	f.Add([]byte{5, 0x08, 0x14, 0x05, 0, 0x00, 0x02, 0x15, 0})
	f.Add([]byte{5, 0x08, 0x14, 0x05, 0, 0x10, 0x26, 0x15, 0, 0x00, 0x02, 0x05, 0})
	// The same with power losses: after the hold; after the merge.
	f.Add([]byte{5, 0x08, 0x14, 0x35, 0})
	f.Add([]byte{5, 0x08, 0x14, 0x05, 0, 0x00, 0x02, 0x35, 0})
	// Two holds, the second by a request whose clock read a second
	// earlier (due first, logged second), a crash, a release, a crash.
	f.Add([]byte{5, 0x08, 0x14, 0x05, 0, 0x0e, 50, 0x08, 0x15, 0x15, 0, 0x06, 1, 0x15, 0})
	// Both sides in one request, then the client side again alone; the
	// server side alone, then both sides in one request (a call merged in
	// its request is remembered: one row each).
	f.Add([]byte{0, 0x00, 0x02, 0x08, 0x14, 0x05, 0, 0x00, 0x02, 0x05, 0})
	f.Add([]byte{1, 0x08, 0x14, 0x05, 0, 0x06, 30, 0x00, 0x02, 0x08, 0x14, 0x05, 0})
	// With the spool, a clean restart between the sides (no window, a
	// window), and between a call merged in its request and a copy of its
	// client side: what the pairer remembered, it remembers again.
	f.Add([]byte{4, 0x08, 0x14, 0x45, 0, 0x00, 0x02, 0x05, 0})
	f.Add([]byte{5, 0x08, 0x14, 0x45, 0, 0x00, 0x02, 0x05, 0})
	f.Add([]byte{4, 0x00, 0x02, 0x08, 0x14, 0x45, 0, 0x00, 0x02, 0x05, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 257 {
			return
		}
		cfg := OTLPConfig{}
		if data[0]&1 != 0 {
			cfg.PairWindow = 10 * time.Second
		}
		if data[0]&2 != 0 {
			cfg.PairMaxBytes = 4 << 10 // a few entries: holds refused, rows forgotten early
		}
		var r *otlpRig
		var sp *Spool
		var mu sync.Mutex
		var failNext, failed int // fsyncs to fail, fsyncs failed
		fsync := func(f *os.File) error {
			mu.Lock()
			defer mu.Unlock()
			if failNext > 0 {
				failNext--
				failed++
				return errors.New("injected fsync failure")
			}
			return f.Sync()
		}
		if data[0]&4 != 0 {
			r, sp = newOTLPSpoolRig(t, cfg)
			sp.fsync, r.o.pair.log.sp.fsync = fsync, fsync
		} else {
			r = newOTLPRig(t, cfg, 1<<16)
		}
		// crash ends the process as SIGKILL does and starts it again on the
		// spool: the pairer's memory is gone, ClickHouse keeps its rows.
		type lifeSpan struct {
			key  [2]byte
			life int
		}
		sentIn, life := map[lifeSpan]bool{}, 0 // the spans sent, by the life of the process that got them
		crashed, failedFsync := false, false   // since the start
		var advanced time.Duration             // the clock's moves, in all
		crash := func(powerLoss bool) {
			crashed = true
			life++
			r, sp = restartOTLP(t, r, sp, cfg, powerLoss)
			sp.fsync, r.o.pair.log.sp.fsync = fsync, fsync
		}
		// restart ends the process as SIGTERM does and starts it again:
		// what it remembered, it remembers again.
		restart := func() {
			mu.Lock()
			failNext = 0 // an fsync failure the request did not meet is not the shutdown's
			mu.Unlock()
			r, sp = cleanRestartOTLP(t, r, sp, cfg)
			sp.fsync, r.o.pair.log.sp.fsync = fsync, fsync
		}
		sent := map[[2]byte]bool{} // the spans sent, by the bytes that made them
		var acked []testSpan       // client and server spans of requests answered without error
		// Two different spans with the same trace and span id are one span
		// to the receiver (a copy: an exporter's retry): only the first is
		// stored, and a span whose parent is that id may be folded into
		// the copy (an inner span of it) and dropped with it.
		owner, collided := map[[2]byte][2]byte{}, map[[2]byte]bool{}
		var skew time.Duration // of the next request's clock
		consume := func(spans []testSpan) {
			if len(spans) == 0 {
				return
			}
			if skew > 0 {
				now := r.now
				r.now = now.Add(-skew)
				defer func() { r.now = now }()
				skew = 0
			}
			mu.Lock()
			before := failed
			mu.Unlock()
			rejected, _, err := r.o.Consume(tracesOf(spans...))
			mu.Lock()
			injected := failed > before
			mu.Unlock()
			if err != nil && !injected {
				t.Fatalf("consume: %v", err)
			}
			if err == nil && rejected == 0 {
				for _, s := range spans {
					if s.kind == ptrace.SpanKindClient || s.kind == ptrace.SpanKindServer {
						acked = append(acked, s)
					}
				}
			}
			checkPairerBooks(t, r.o.pair)
		}
		var req []testSpan
		for _, st := range pairerProgram(data[1:]) {
			switch {
			case st.span != nil:
				req = append(req, *st.span)
				sent[st.key] = true
				sentIn[lifeSpan{st.key, life}] = true
				id := [2]byte{st.span.trace, st.span.span}
				if k, ok := owner[id]; ok && k != st.key {
					collided[id] = true
				}
				owner[id] = st.key
			case st.skew > 0:
				skew = st.skew
			case st.send:
				if st.failFsync {
					failedFsync = true
					mu.Lock()
					failNext = 1
					mu.Unlock()
				}
				consume(req)
				if st.retry {
					consume(req)
				}
				req = nil
				switch {
				case sp == nil:
				case st.restart:
					restart()
				case st.crash:
					crash(st.powerLoss)
				}
			default:
				consume(req)
				req = nil
				r.now = r.now.Add(st.advance)
				advanced += st.advance
				r.o.release(st.advance == 0) // 0: everything held, as Flush
				checkPairerBooks(t, r.o.pair)
			}
		}
		mu.Lock()
		failNext = 0
		mu.Unlock()
		consume(req)
		r.o.release(true) // every held span stored, and remembered from now
		r.now = r.now.Add(pairMemory + time.Minute)
		r.o.release(false)
		checkPairerBooks(t, r.o.pair)
		if held, kept := r.o.pair.counts(); held != 0 || kept != 0 {
			t.Fatalf("after the memory passed: %d held, %d remembered", held, kept)
		}
		if r.o.pair.bytes != 0 {
			t.Fatalf("after the memory passed: %d bytes counted", r.o.pair.bytes)
		}
		rows := r.drain(t)
		for _, c := range rows {
			switch {
			case c.Tool == "" || c.Source != sourceOTLP || c.Category == "" || c.SessionKey == "":
				t.Fatalf("invalid row %+v", c)
			case c.Side != sideClient && c.Side != sideServer && c.Side != sideBoth && c.Side != "":
				t.Fatalf("side %q", c.Side)
			}
		}
		{
			// Every span of an answered request is on disk, in the spool or,
			// held, in the pair log, and a crash loses none. By trace and
			// side, a merged row under both: a server span whose parent is
			// a client span of another tool merges with it.
			stored := map[string]bool{}
			for _, c := range rows {
				for _, side := range []string{sideClient, sideServer} {
					if c.Side == side || c.Side == sideBoth {
						stored[c.TraceID+"/"+side] = true
					}
				}
			}
			for _, s := range acked {
				if collided[[2]byte{s.trace, s.span}] || s.parent != 0 && collided[[2]byte{s.trace, s.parent}] {
					continue
				}
				trace := strings.Repeat(fmt.Sprintf("%02x", s.trace), 16)
				side := sideServer
				if s.kind == ptrace.SpanKindClient {
					side = sideClient
				}
				if !stored[trace+"/"+side] {
					t.Fatalf("an acknowledged %s span of %s in trace %s has no row", side, s.attrs["gen_ai.tool.name"], trace)
				}
			}
		}
		if n, calls, ok := pairerCalls(sent, data[1:]); ok && !crashed && !failedFsync && data[0]&2 == 0 && advanced < pairMemory-time.Minute &&
			len(collided) == 0 && len(final(rows)) > calls {
			// One life, nothing forgotten: every call is one row.
			t.Fatalf("%d rows under FINAL for %d calls (%d spans sent, none forgotten)", len(final(rows)), calls, n)
		}
		if n := len(final(rows)); n > len(sentIn) {
			t.Fatalf("%d rows under FINAL for %d spans sent (%d counted once in each life of the process)", n, len(sent), len(sentIn))
		}
	})
}

// pairerCalls counts the calls that the spans sent make, when their shapes
// are ones whose calls it can count (ok): client and server spans only,
// no client span under another client span (an outer and an inner span of
// one call, folded or not by their tools), and at most one server span
// under each client span sent. A server span and the client span that is
// its parent are one call; every other span sent (its copies aside) is one.
// n is the spans sent.
func pairerCalls(sent map[[2]byte]bool, program []byte) (n, calls int, ok bool) {
	spans := map[[2]byte]testSpan{}
	for _, st := range pairerProgram(program) {
		if st.span != nil && sent[st.key] {
			spans[st.key] = *st.span
		}
	}
	clients := map[[2]byte]bool{} // trace and span id of each client span sent
	for _, s := range spans {
		switch s.kind {
		case ptrace.SpanKindClient:
			clients[[2]byte{s.trace, s.span}] = true
		case ptrace.SpanKindServer:
		default:
			return len(spans), 0, false
		}
	}
	servers := map[[2]byte]bool{} // the client span each server span pairs with
	calls = len(spans)
	for _, s := range spans {
		if s.parent == 0 || !clients[[2]byte{s.trace, s.parent}] {
			continue
		}
		if s.kind == ptrace.SpanKindClient {
			return len(spans), 0, false
		}
		if servers[[2]byte{s.trace, s.parent}] {
			return len(spans), 0, false
		}
		servers[[2]byte{s.trace, s.parent}] = true
		calls--
	}
	return len(spans), calls, true
}

// pairerStep is one step of a FuzzOTLPPairer program: a span added to the
// request being built, the request sent (and sent again when retry), or
// the request sent and the clock moved by advance (by none: every held span
// released).
type pairerStep struct {
	span      *testSpan
	key       [2]byte // what made span: the same key, the same span
	send      bool
	retry     bool
	failFsync bool // the next fsync of the spool, if any, fails
	crash     bool // after the send, the process crashes and starts again on its spool
	powerLoss bool // the crash is a power loss: what was not fsynced is gone
	restart   bool // after the send, the process ends as SIGTERM does and starts again (with the spool)
	advance   time.Duration
	// skew makes the next request's clock read this much earlier: a
	// request that read the clock before another but met the pairer after it.
	skew time.Duration
}

// pairerProgram reads steps from b, two bytes each. In the first byte the
// low three bits are the step: 0-4 a span, 5 send, 6 move the clock by the
// second byte in seconds (0: release every held span, as Flush does), or
// with bit 3 set make the next request's clock read 20 ms times the second
// byte plus one earlier, 7 send twice; a send whose first byte has bit 3 set fails the spool's next
// fsync, and one with bit 4 set is followed by a crash and a restart (with
// the spool), with bit 5 set too by a power loss; one with bit 6 set, by
// a clean shutdown (SIGTERM) and a start instead. For a span, the first
// byte's bits 3-4 are its kind (client, server, internal, client again)
// and bit 5 its tool; the second byte's
// bit 0 is its trace, bits 1-3 its span id and bits 4-6 its parent's (0:
// none), and bit 7 makes it an error; it starts 10 ms times the second byte
// after the base, so that the same two bytes make the same span.
func pairerProgram(b []byte) []pairerStep {
	var out []pairerStep
	for i := 0; i+1 < len(b); i += 2 {
		a, v := b[i], b[i+1]
		switch a & 7 {
		case 5:
			out = append(out, pairerStep{send: true, failFsync: a&8 != 0, crash: a&16 != 0, powerLoss: a&32 != 0, restart: a&64 != 0})
		case 6:
			if a&8 != 0 {
				out = append(out, pairerStep{skew: time.Duration(v+1) * 20 * time.Millisecond})
				continue
			}
			out = append(out, pairerStep{advance: time.Duration(v) * time.Second})
		case 7:
			out = append(out, pairerStep{send: true, retry: true, failFsync: a&8 != 0, crash: a&16 != 0, powerLoss: a&32 != 0, restart: a&64 != 0})
		default:
			kinds := [...]ptrace.SpanKind{ptrace.SpanKindClient, ptrace.SpanKindServer, ptrace.SpanKindInternal, ptrace.SpanKindClient}
			tools := [...]string{"search_docs", "get_invoice"}
			tool := tools[a>>5&1]
			s := testSpan{name: "tools/call " + tool, kind: kinds[a>>3&3], trace: 1 + v&1, span: v >> 1 & 7, parent: v >> 4 & 7,
				startMs: int64(v) * 10, durMs: 100,
				attrs: map[string]any{"mcp.method.name": "tools/call", "gen_ai.tool.name": tool, "jsonrpc.request.id": "7", "mcp.session.id": "s1",
					"gen_ai.tool.call.arguments": map[string]any{"q": int(v)}}}
			if s.parent == s.span {
				s.parent = 0
			}
			if s.kind == ptrace.SpanKindClient {
				s.res = map[string]any{"service.name": "agent", "mcplens.tenant": "acme"}
				s.attrs["server.address"] = "kb.internal"
			}
			if v&0x80 != 0 {
				s.attrs["error.type"] = "tool_error"
				s.attrs["gen_ai.tool.call.result"] = `{"content":[{"type":"text","text":"Rate limit exceeded"}],"isError":true}`
			} else if s.kind != ptrace.SpanKindClient {
				s.attrs["gen_ai.tool.call.result"] = `{"content":[{"type":"text","text":"ok"}]}`
			}
			out = append(out, pairerStep{span: &s, key: [2]byte{a &^ 7, v}})
		}
	}
	return out
}

// checkPairerBooks fails t unless p's counts and byte totals are those of
// the entries in its queues and index: every held entry in the held queue,
// every remembered one in the kept queue, the bytes their footprints, and
// every indexed entry alive.
func checkPairerBooks(t *testing.T, p *pairer) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	var held, kept int
	var bytes, heldBytes int64
	seen := map[*pairEntry]bool{}
	for _, e := range p.held {
		if e.state == entryHeld && !seen[e] {
			seen[e] = true
			held++
			bytes += e.size
			heldBytes += e.size
		}
	}
	for _, e := range p.kept {
		if e.state == entryKept && !seen[e] {
			seen[e] = true
			kept++
			bytes += e.size
		}
	}
	if held != p.nHeld || kept != p.nKept || bytes != p.bytes || heldBytes != p.heldBytes {
		t.Fatalf("books: %d held, %d kept, %d bytes (%d held) counted; queues hold %d, %d, %d (%d)",
			p.nHeld, p.nKept, p.bytes, p.heldBytes, held, kept, bytes, heldBytes)
	}
	if p.nHeld > p.capacity || p.nKept > p.capacity {
		t.Fatalf("%d held and %d kept, capacity %d", p.nHeld, p.nKept, p.capacity)
	}
	for _, e := range p.idx {
		if e.state == entryGone || !seen[e] {
			t.Fatalf("the index holds an entry in neither queue (state %d)", e.state)
		}
	}
}

// FuzzOTLPRequestOrder: the spans of one export request make as many rows
// under FINAL whatever their order. Each pair of bytes after the first is
// a span of FuzzOTLPPairer's universe (pairerProgram; steps that are not
// spans are left out); the request is sent as given, reversed and rotated
// by the first byte, each to a new receiver, with no pair window and with
// one. Shapes whose rows depend on the order by design are left out
// (orderFree): two different spans with one id, where the first is the one
// kept, two spans under one parent, where the first met may be the one that
// merges, a span under a span of another tool, a client span under a
// span of the server's side or of no side (a handler calling the same tool:
// one call or two, as the spans met first say), and a span under a span of
// no side (which side that one is, the spans met first say).
func FuzzOTLPRequestOrder(f *testing.F) {
	// Both sides and an inner span of the server's side; the same with an
	// inner server span; a client span under its execute_tool-like outer
	// client span and its server span; a server span, its client span and
	// a copy of the server span.
	f.Add([]byte{1, 0x00, 0x02, 0x08, 0x14, 0x10, 0x26})
	f.Add([]byte{2, 0x10, 0x26, 0x08, 0x14, 0x00, 0x02, 0x08, 0x26})
	f.Add([]byte{0, 0x18, 0x04, 0x00, 0x22, 0x08, 0x14})
	f.Add([]byte{0, 0x08, 0x14, 0x00, 0x02, 0x08, 0x14})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 || len(data) > 1+2*10 {
			return
		}
		var spans []testSpan
		var keys [][2]byte
		for _, st := range pairerProgram(data[1:]) {
			if st.span != nil {
				spans, keys = append(spans, *st.span), append(keys, st.key)
			}
		}
		if len(spans) < 2 || !orderFree(spans, keys) {
			return
		}
		rot := int(data[0]) % len(spans)
		reversed := slices.Clone(spans)
		slices.Reverse(reversed)
		orders := map[string][]testSpan{
			"as given": spans,
			"reversed": reversed,
			"rotated":  append(append([]testSpan(nil), spans[rot:]...), spans[:rot]...),
		}
		for _, window := range []time.Duration{0, 10 * time.Second} {
			counts := map[string]int{}
			for name, order := range orders {
				r := newOTLPRig(t, OTLPConfig{PairWindow: window}, 1000)
				if _, _, err := r.o.Consume(tracesOf(order...)); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				r.o.release(true)
				counts[name] = len(final(r.drain(t)))
			}
			if counts["as given"] != counts["reversed"] || counts["as given"] != counts["rotated"] {
				t.Fatalf("window %v: rows under FINAL by the order of the request's spans: %v", window, counts)
			}
		}
	})
}

// orderFree reports whether the rows of spans, sent in one request, may
// not depend on their order: no two different spans (keys) with one trace
// and span id, no two different spans under one parent in the request, no
// span under a span of another tool in the request, no client span under
// a span of another kind, and no span under an internal span.
func orderFree(spans []testSpan, keys [][2]byte) bool {
	byID := map[[2]byte]int{}
	for i, s := range spans {
		id := [2]byte{s.trace, s.span}
		if j, ok := byID[id]; ok && keys[j] != keys[i] {
			return false
		}
		byID[id] = i
	}
	under := map[[2]byte][2]byte{} // parent: the first child's key
	for i, s := range spans {
		if s.parent == 0 {
			continue
		}
		j, ok := byID[[2]byte{s.trace, s.parent}]
		if !ok {
			continue
		}
		if spans[j].attrs["gen_ai.tool.name"] != s.attrs["gen_ai.tool.name"] {
			return false
		}
		if s.kind == ptrace.SpanKindClient && spans[j].kind != ptrace.SpanKindClient {
			return false // a server's handler calling the tool again: the same call or another
		}
		if spans[j].kind == ptrace.SpanKindInternal {
			return false // a span of no side between two: which side it is, the spans met first say
		}
		p := [2]byte{s.trace, s.parent}
		if k, ok := under[p]; ok && k != keys[i] {
			return false
		}
		under[p] = keys[i]
	}
	return true
}
