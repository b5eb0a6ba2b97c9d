package pipeline

import "fmt"

// Batch is the calls of one INSERT, held encoded: runs of the records the
// Batcher queued (the spool's format) with each call's offset in its
// record. An Inserter reads the calls one at a time, so that an INSERT of
// any size needs memory for its encoded bytes and one block of decoded
// calls only. A Batch is never written after it is made, and the records
// under it never are: the strings of the calls it decodes view them.
type Batch struct {
	segs []seg
	n    int
}

// seg is a run of calls of one encoded record payload: calls from..to
// (0-based, to exclusive) of p, which starts each call i at offs[i]. Runs
// of one record share p and offs.
type seg struct {
	p        []byte
	offs     []uint32
	from, to int
}

// BatchOf encodes calls into a Batch (tests, fixtures, and callers that
// hold Call values).
func BatchOf(calls []Call) *Batch {
	if len(calls) == 0 {
		return &Batch{}
	}
	var offs []uint32
	p := appendRecord(nil, calls, nil, &offs)
	return &Batch{segs: []seg{{p: p, offs: offs, to: len(calls)}}, n: len(calls)}
}

// Len returns the number of calls in b.
func (b *Batch) Len() int { return b.n }

// Calls decodes every call of b, in order. Their strings view b's records.
func (b *Batch) Calls() ([]Call, error) {
	calls := make([]Call, b.n)
	var arena []string
	i := 0
	for _, s := range b.segs {
		for k := s.from; k < s.to; k++ {
			var err error
			if arena, err = decodeCallAt(s.p, s.offs[k], &calls[i], arena); err != nil {
				return nil, fmt.Errorf("call %d of the batch: %w", i, err)
			}
			i++
		}
	}
	return calls, nil
}

// each decodes the calls of b in order, each into the same scratch Call,
// and calls fn with it (valid until fn returns), or with the error of a
// call that does not decode. It reads the runs once, where At walks them
// for every call.
func (b *Batch) each(fn func(c *Call, err error)) {
	var c Call
	var arena []string
	for _, s := range b.segs {
		for k := s.from; k < s.to; k++ {
			c = Call{}
			var err error
			arena, err = decodeCallAt(s.p, s.offs[k], &c, arena[:0])
			fn(&c, err)
		}
	}
}

// At decodes call i of b (0-based, in b's order).
func (b *Batch) At(i int) (Call, error) {
	var c Call
	s, k, err := b.locate(i)
	if err == nil {
		_, err = decodeCallAt(s.p, s.offs[k], &c, nil)
	}
	return c, err
}

// locate returns the run holding call i and its index in the run's record.
func (b *Batch) locate(i int) (seg, int, error) {
	if i < 0 || i >= b.n {
		return seg{}, 0, fmt.Errorf("call %d of a batch of %d", i, b.n)
	}
	for _, s := range b.segs {
		if i < s.to-s.from {
			return s, s.from + i, nil
		}
		i -= s.to - s.from
	}
	return seg{}, 0, fmt.Errorf("batch of %d calls holds fewer runs", b.n)
}

// without returns b without its call i: the run holding it is split in two.
func (b *Batch) without(i int) *Batch {
	out := &Batch{n: b.n - 1, segs: make([]seg, 0, len(b.segs)+1)}
	for _, s := range b.segs {
		n := s.to - s.from
		if i < 0 || i >= n {
			out.segs = append(out.segs, s)
			i -= n
			continue
		}
		if i > 0 {
			out.segs = append(out.segs, seg{p: s.p, offs: s.offs, from: s.from, to: s.from + i})
		}
		if s.from+i+1 < s.to {
			out.segs = append(out.segs, seg{p: s.p, offs: s.offs, from: s.from + i + 1, to: s.to})
		}
		i = -1
	}
	return out
}

// callRef is where a call of a batch is: record run seg, call k of it.
type callRef struct {
	seg, k int32
}

// decode decodes the call at r into c, as decodeCallAt does.
func (b *Batch) decode(r callRef, c *Call, arena []string) ([]string, error) {
	s := &b.segs[r.seg]
	return decodeCallAt(s.p, s.offs[r.k], c, arena)
}

// sortKeys returns, in b's order, the sort key of each call and where it
// is. A call whose key does not decode fails it with a RowError.
func (b *Batch) sortKeys() ([]sortKey, []callRef, error) {
	keys := make([]sortKey, 0, b.n)
	refs := make([]callRef, 0, b.n)
	for si, s := range b.segs {
		for k := s.from; k < s.to; k++ {
			key, err := sortKeyAt(s.p, s.offs[k])
			if err != nil {
				return nil, nil, &RowError{Index: len(keys), Err: err}
			}
			keys = append(keys, key)
			refs = append(refs, callRef{seg: int32(si), k: int32(k)})
		}
	}
	return keys, refs, nil
}
