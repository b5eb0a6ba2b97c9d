package pipeline

import (
	"errors"
	"reflect"
	"testing"
)

// splitBatch is a Batch as the Batcher takes one from its queue: runs of
// three records, the first and last cut, so that run and record indexes
// differ.
func splitBatch(t *testing.T) (*Batch, []Call) {
	t.Helper()
	var want []Call
	b := &Batch{}
	for r, n := range []int{5, 3, 4} {
		calls := make([]Call, n)
		for i := range calls {
			calls[i] = fullCall(t, 10*r+i)
		}
		var offs []uint32
		p := appendRecord(nil, calls, []DeadLetter{{Reason: "kept apart"}}, &offs)
		from, to := 0, n
		switch r {
		case 0:
			from = 2
		case 2:
			to = 3
		}
		b.segs = append(b.segs, seg{p: p, offs: offs, from: from, to: to})
		b.n += to - from
		want = append(want, calls[from:to]...)
	}
	return b, want
}

func TestBatchReadsItsRunsInOrder(t *testing.T) {
	b, want := splitBatch(t)
	got, err := b.Calls()
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() != len(want) || !reflect.DeepEqual(got, want) {
		t.Fatalf("Calls: %d calls, want the %d of the runs in order", len(got), len(want))
	}
	keys, refs, err := b.sortKeys()
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		c, err := b.At(i)
		if err != nil || !reflect.DeepEqual(c, want[i]) {
			t.Errorf("At(%d): %v, or not call %d", i, err, i)
		}
		if keys[i].session != want[i].SessionKey || keys[i].id != want[i].CallID {
			t.Errorf("sort key %d: %+v, %+v", i, keys[i], refs[i])
		}
		var c2 Call
		if _, err := b.decode(refs[i], &c2, nil); err != nil || !reflect.DeepEqual(c2, want[i]) {
			t.Errorf("ref %d does not point at call %d: %v", i, i, err)
		}
		w := b.without(i)
		rest, err := w.Calls()
		if err != nil {
			t.Fatal(err)
		}
		wantRest := append(append([]Call(nil), want[:i]...), want[i+1:]...)
		if w.Len() != len(want)-1 || !reflect.DeepEqual(rest, wantRest) {
			t.Errorf("without(%d) does not hold the other %d calls in order", i, len(want)-1)
		}
	}
	i := 0
	b.each(func(c *Call, err error) {
		if err != nil || i >= len(want) || !reflect.DeepEqual(*c, want[i]) {
			t.Errorf("each, call %d: %v, or not call %d", i, err, i)
		}
		i++
	})
	if i != len(want) {
		t.Errorf("each read %d calls, want %d", i, len(want))
	}
	if _, err := b.At(len(want)); err == nil {
		t.Error("At past the end: no error")
	}
	if empty := BatchOf(nil); empty.Len() != 0 {
		t.Errorf("BatchOf(nil) holds %d calls", empty.Len())
	}
}

// TestBatchNamesTheCallADamagedRecordLoses damages the third call of a
// batch: reading its key fails with a RowError at that call, so that the
// Batcher dead-letters it alone and inserts the others.
func TestBatchNamesTheCallADamagedRecordLoses(t *testing.T) {
	b, _ := splitBatch(t)
	s := &b.segs[1]
	p := append([]byte(nil), s.p...)
	for i := s.offs[0]; i < s.offs[1]; i++ { // the time's varint overflows
		p[i] = 0xff
	}
	s.p = p
	_, _, err := b.sortKeys()
	var row *RowError
	if !errors.As(err, &row) || row.Index != 3 {
		t.Fatalf("sortKeys of a batch whose call 3 is damaged: %v, want a RowError at 3", err)
	}
	if _, err := b.At(3); err == nil {
		t.Fatal("At(3) of the damaged call decoded")
	}
	d := rejectedAt(b, 3, err)
	if d.Reason == "" || d.Payload != "" {
		t.Errorf("dead letter of an undecodable call: %+v", d)
	}
	// A batch refused whole: every call gets a dead letter, the damaged
	// one with the decode error.
	var dls []DeadLetter
	i := 0
	b.each(func(c *Call, derr error) {
		if (derr != nil) != (i == 3) {
			t.Errorf("each, call %d: decode error %v", i, derr)
		}
		dls = append(dls, rejected(c, derr, errors.New("refused")))
		i++
	})
	if len(dls) != b.Len() || dls[3].Payload != "" || dls[2].Payload == "" || dls[4].Payload == "" {
		t.Errorf("dead letters of a refused batch: %d of %d, damaged one %+v", len(dls), b.Len(), dls[3])
	}
	if rest, err := b.without(3).Calls(); err != nil || len(rest) != b.Len()-1 {
		t.Errorf("without the damaged call: %d calls, %v", len(rest), err)
	}
}
