package pipeline

import (
	"encoding/binary"
	"math/bits"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// inverse returns the multiplicative inverse of the odd m modulo 2^64.
func inverse(m uint64) uint64 {
	x := m // correct to 3 bits; each step doubles them
	for range 5 {
		x *= 2 - m*x
	}
	return x
}

// collidingKey returns a key other than k in k's slot of p: its first word
// and its span id changed so that the mix's two terms change by the same
// bits.
func collidingKey(p *pairer, k linkKey) linkKey {
	const d = 0x5A5A_0000_0000_00A5
	m1, m3 := uint64(slotMul0), uint64(slotMul2)
	a := binary.LittleEndian.Uint64(k[0:8]) ^ p.seed[0]
	c := binary.LittleEndian.Uint64(k[16:24]) ^ p.seed[2]
	a2 := (a*m1 ^ d) * inverse(m1)
	c2 := (c*m3 ^ bits.RotateLeft64(d, -slotRot2)) * inverse(m3)
	o := k
	binary.LittleEndian.PutUint64(o[0:8], a2^p.seed[0])
	binary.LittleEndian.PutUint64(o[16:24], c2^p.seed[2])
	return o
}

// TestPairerSlotCollisionsNeverRelateOtherKeys builds two keys in one slot
// of the pairer's index: the entry registered under the first is not found
// under the second even for facts it relates to, and the second takes the
// slot without disturbing the first entry's other keys.
func TestPairerSlotCollisionsNeverRelateOtherKeys(t *testing.T) {
	p := newPairer(time.Second, 100, 1<<20, NewMetrics(prometheus.NewRegistry()))
	f := spanFacts{spanScalars: spanScalars{trace: pcommon.TraceID{1, 2, 3}, span: pcommon.SpanID{9}, parent: pcommon.SpanID{7}}, side: sideClient,
		links: []pcommon.SpanID{{8}}}
	keys := f.pairKeys()
	if len(keys) != 2 {
		t.Fatalf("pairKeys = %d keys, want 2", len(keys))
	}
	other := collidingKey(p, keys[0])
	if other == keys[0] || p.slot(other) != p.slot(keys[0]) {
		t.Fatalf("collidingKey: %x (slot %x) for %x (slot %x)", other, p.slot(other), keys[0], p.slot(keys[0]))
	}
	p.hold(pack(&f), keys, time.Now())
	e, rel := p.find(keys, &f)
	if e == nil || rel != relSame {
		t.Fatalf("find(own keys) = %v, %d; want the entry, relSame", e, rel)
	}
	if e2, _ := p.find([]linkKey{other}, &f); e2 != nil {
		t.Fatalf("find(a colliding key) found the entry of another key")
	}
	g := f
	g.span, g.parent, g.links = pcommon.SpanID{10}, pcommon.SpanID{11}, nil
	p.hold(pack(&g), []linkKey{other}, time.Now())
	if got, _ := p.find([]linkKey{other}, &g); got == nil || got == e {
		t.Fatalf("find(colliding key) after it was registered = %v, want its own entry", got)
	}
	if got, _ := p.find(keys[1:], &f); got != e {
		t.Fatalf("the first entry's other key lost its entry")
	}
	p.forget(e)
	if got, _ := p.find([]linkKey{other}, &g); got == nil {
		t.Fatalf("forgetting the first entry removed the slot the second holds")
	}
}

// TestOTLPAdmitMeetsAnEntryRegisteredAfterTheProbe: a span that met
// nothing when its request probed the pairer, and was built alone, still
// meets the other side of its call that another request stored before
// this one locked the pairer: admit looks again whenever an entry was
// registered since the probe, and the two sides end as one row.
func TestOTLPAdmitMeetsAnEntryRegisteredAfterTheProbe(t *testing.T) {
	for _, registered := range []bool{false, true} {
		r := newOTLPRig(t, OTLPConfig{}, 100) // -otlp-pair-window 0: stored at once
		d := &traceDecoder{p: r.o.proc, cfg: r.o.cfg, now: r.now}
		facts, _, st := d.decodeTraces(tracesOf(serverSide), nil)
		if len(facts) != 1 {
			t.Fatalf("%d facts, want 1", len(facts))
		}
		l := []linkableSpan{{f: facts[0], keys: facts[0].pairKeys()}}
		r.o.prepare(d, l)
		if l[0].met || !l[0].built || l[0].err != nil {
			t.Fatalf("prepared: met %v, built %v, %v; want built alone", l[0].met, l[0].built, l[0].err)
		}
		if registered {
			r.send(t, clientSide) // another request stores the client's side now
		}
		n, next, v, err := r.o.admit(d, &st, nil, nil, l, r.now)
		if err == nil {
			err = r.o.settle(v)
		}
		if err != nil || n != 1 || len(next) != 0 {
			t.Fatalf("admit: %d accepted, %d deferred, %v", n, len(next), err)
		}
		rows := r.drain(t)
		var sides []string
		for _, c := range final(rows) {
			sides = append(sides, c.Side)
		}
		slices.Sort(sides)
		want := []string{sideServer}
		if registered {
			want = []string{sideBoth} // the client's own row, replaced by the merge's under its key
		}
		if !slices.Equal(sides, want) {
			t.Errorf("client stored after the probe: %v; rows after FINAL by side %v, want %v (%d rows: %+v)", registered, sides, want, len(rows), rows)
		}
	}
}

// TestPackFactsWithARowPacksItsIdentity: the identity packed with a row's
// facts equals identityOf's, in the facts' allocation, and detach gives it
// a buffer of its own.
func TestPackFactsWithARowPacksItsIdentity(t *testing.T) {
	f := spanFacts{name: "tools/call q", tenant: "acme", server: "kb", tool: "search_docs", args: `{"q":"x"}`, result: "r",
		texts: []string{"Rate limit"}}
	row := Call{Tenant: "acme", Server: "kb", Tool: "search_docs", SessionKey: "s9", TimeMs: 5, CallID: 7, IngestedMs: 9}
	p, id := packFacts(&f, &row)
	if want := identityOf(&row); id.timeMs != want.timeMs || id.callID != want.callID || id.ingestedMs != want.ingestedMs ||
		id.tenant() != want.tenant() || id.server() != want.server() || id.tool() != want.tool() || id.sessionKey() != want.sessionKey() {
		t.Errorf("packed identity %+v, want %+v", id, want)
	}
	if got := p.unpack(); !reflect.DeepEqual(got, f) {
		t.Errorf("unpacked %+v, want %+v", got, f)
	}
	full := unsafe.String(unsafe.StringData(p.buf), len(p.buf)+len(id.buf))
	if !strings.HasSuffix(full, id.buf) {
		t.Errorf("the identity is not in the facts' buffer: %q after %q", id.buf, p.buf)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = packFacts(&f, &row) }); n != 2 {
		t.Errorf("packFacts with a row: %.0f allocations, want 2 (the strings' buffer and the texts)", n)
	}
	was := id.buf
	id.detach()
	if id.buf != was || unsafe.StringData(id.buf) == unsafe.StringData(was) {
		t.Errorf("detach: %q at the same address", id.buf)
	}
}

// TestPairInRequestReusesAnEmptyIndex: the index a request's spans were
// paired in is left empty, so that the next request, given the same map,
// does not follow a parent id to a span of the request before.
func TestPairInRequestReusesAnEmptyIndex(t *testing.T) {
	trace := pcommon.TraceID{7}
	client := spanFacts{spanScalars: spanScalars{trace: trace, span: pcommon.SpanID{1}}, side: sideClient, tool: "search"}
	server := spanFacts{spanScalars: spanScalars{trace: trace, span: pcommon.SpanID{2}, parent: pcommon.SpanID{1}}, side: sideServer, tool: "search"}
	idx := map[linkKey]int{}
	if got := pairInRequest([]spanFacts{client, server}, idx); len(got) != 1 || got[0].side != sideBoth {
		t.Fatalf("first request: %d calls, want the two sides merged into one", len(got))
	}
	if len(idx) != 0 {
		t.Fatalf("index left with %d entries", len(idx))
	}
	// The next request: another client span first, then a server span whose
	// parent is the first request's client span, not this one.
	other := client
	other.span = pcommon.SpanID{3}
	if got := pairInRequest([]spanFacts{other, server}, idx); len(got) != 2 {
		t.Fatalf("second request: %d calls, want 2: its server span merged with a span its parent id does not name", len(got))
	}
	// A client's span twice is one call; a server's root span twice is
	// left to the rows, which are the same (nothing to follow).
	if got := pairInRequest([]spanFacts{other, other}, nil); len(got) != 1 {
		t.Fatalf("a client's span twice: %d calls, want 1", len(got))
	}
	root := server
	root.parent = pcommon.SpanID{}
	if got := pairInRequest([]spanFacts{root, root}, nil); len(got) != 2 {
		t.Fatalf("a server's root span twice: %d calls, want both", len(got))
	}
}
