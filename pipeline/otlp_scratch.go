package pipeline

import (
	"io"
	"sync"
)

// The OTLP receiver reuses, across requests, the memory that scales with a
// request: the body, the facts of its spans and the Calls built from them.
// At 1,000 spans per request these were three allocations of about a
// megabyte each, grown by doubling, and the garbage they made was most of
// what the collector had to do under -memory-limit.

// maxKeptBody is the largest body buffer kept for reuse; a larger one is
// left to the collector so that one huge request does not pin its memory.
const maxKeptBody = 8 << 20

// maxKeptIndex is the most spans a request's pairInRequest index is kept
// for; a larger request indexes its spans in a map of its own.
const maxKeptIndex = 8192

// otlpScratch is the reusable memory of one request. Nothing in it may be
// referenced once the request is answered: pdata copies the strings it
// reads from the body, the facts the pairer keeps are detached from the
// body, and the Batcher copies the Calls.
type otlpScratch struct {
	body     []byte
	wire     wireTraces // its views alias body
	facts    []spanFacts
	calls    []Call
	linkable []linkableSpan
	// inRequest indexes a request's spans for pairInRequest; empty
	// between requests.
	inRequest map[linkKey]int
}

// scratchPool hands out otlpScratch values of one receiver.
type scratchPool struct {
	scratch sync.Pool // *otlpScratch
	gzip    gzipPool
}

func (p *scratchPool) get() *otlpScratch {
	if s, ok := p.scratch.Get().(*otlpScratch); ok {
		return s
	}
	return &otlpScratch{}
}

// put returns s for reuse, without the references its slices still hold.
func (p *scratchPool) put(s *otlpScratch) {
	clear(s.facts[:cap(s.facts)])
	clear(s.calls[:cap(s.calls)])
	clear(s.linkable[:cap(s.linkable)])
	s.facts, s.calls, s.linkable = s.facts[:0], s.calls[:0], s.linkable[:0]
	if cap(s.body) > maxKeptBody {
		s.body, s.wire = nil, wireTraces{} // the views alias the body
	}
	s.body = s.body[:0]
	p.scratch.Put(s)
}

// readAllInto reads r to its end into buf[:0], growing it as io.ReadAll
// does, and returns the bytes read and the first error other than io.EOF.
// The bytes and the error are those of io.ReadAll(r); only the memory
// differs. sizeHint (the Content-Length, -1 unknown) sizes a buffer too
// small for it once.
func readAllInto(buf []byte, r io.Reader, sizeHint int64) ([]byte, error) {
	b := buf[:0]
	if sizeHint > 0 && sizeHint < maxKeptBody && int64(cap(b)) < sizeHint+1 {
		b = make([]byte, 0, sizeHint+1) // +1: the read that sees io.EOF needs room
	}
	if cap(b) < 512 {
		b = make([]byte, 0, 512)
	}
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF { //nolint:errorlint // io.ReadAll's test: a wrapped EOF is an error
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // let append pick the growth
		}
	}
}
