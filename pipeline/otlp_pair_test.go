package pipeline

import (
	"encoding/binary"
	"math/bits"
	"testing"
	"time"

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
	p.hold(packFacts(&f), keys, time.Now())
	e, rel := p.find(keys, &f)
	if e == nil || rel != relSame {
		t.Fatalf("find(own keys) = %v, %d; want the entry, relSame", e, rel)
	}
	if e2, _ := p.find([]linkKey{other}, &f); e2 != nil {
		t.Fatalf("find(a colliding key) found the entry of another key")
	}
	g := f
	g.span, g.parent, g.links = pcommon.SpanID{10}, pcommon.SpanID{11}, nil
	p.hold(packFacts(&g), []linkKey{other}, time.Now())
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
