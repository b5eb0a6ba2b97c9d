package pipeline

import (
	"compress/gzip"
	"io"
	"sync"
)

// gzipPool reuses the gzip readers of request bodies: a reader carries
// about 40 KB of decompression state, allocated anew by every
// gzip.NewReader. Both receivers keep one; the zero value is ready.
type gzipPool struct{ p sync.Pool }

// reader returns a gzip reader of r, reused when one is free. Its error is
// gzip.NewReader's.
func (g *gzipPool) reader(r io.Reader) (*gzip.Reader, error) {
	if zr, ok := g.p.Get().(*gzip.Reader); ok {
		if err := zr.Reset(r); err != nil {
			return nil, err
		}
		return zr, nil
	}
	return gzip.NewReader(r)
}

// put closes zr and keeps it for a later reader.
func (g *gzipPool) put(zr *gzip.Reader) {
	_ = zr.Close() // only reports a decompression error already seen
	g.p.Put(zr)
}
