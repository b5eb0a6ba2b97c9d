package pipeline

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"slices"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

//go:embed insert_calls.sql
var insertCallsSQL string

//go:embed insert_dead_letters.sql
var insertDeadLettersSQL string

// DeadLetter is one rejected line or payload, kept in the dead_letters table
// with the reason the sender was given.
type DeadLetter struct {
	Received time.Time
	Tenant   string
	Source   string // "capture" or "otlp"
	Line     uint32 // 1-based line number in its body; 0 when not line-based
	Reason   string
	Payload  string // truncated to MaxDeadLetterPayload bytes
}

// MaxDeadLetterPayload caps the bytes of a rejected payload kept for inspection.
const MaxDeadLetterPayload = 8 << 10

// Writer inserts rows into ClickHouse with one native batch per call. It is
// safe for concurrent use; each call takes its own connection from the pool.
type Writer struct {
	conn driver.Conn
	m    *Metrics
	// blockRows is how many rows are sent at a time within one INSERT
	// (DefaultBlockRows); tests lower it.
	blockRows int
	// beforeFlush, when set, runs before each block but the last is sent;
	// an error fails the insert there (tests of the abort path).
	beforeFlush func(sent int) error
}

// DefaultBlockRows is the rows of calls the Writer sends as one Native
// block. An INSERT of more rows sends several blocks, and the server
// squashes them into the same part (up to min_insert_block_size_rows,
// about a million rows). The driver builds each INSERT's columns from
// empty and keeps their capacity from one block to the next: a small block
// keeps its buffers (about 1.2 MB) in the CPU's cache and grows them in a
// few steps, where a block of 10,000 rows grew 12 MB of columns by a
// quarter at a time, copying each several times (BENCHMARKS.md).
const DefaultBlockRows = 1000

// NewWriter returns a Writer on conn that records insert latency in m.
func NewWriter(conn driver.Conn, m *Metrics) *Writer {
	return &Writer{conn: conn, m: m, blockRows: DefaultBlockRows}
}

// WriteCalls inserts calls as WriteBatch does (tests and fixtures that
// hold Call values).
func (w *Writer) WriteCalls(ctx context.Context, calls []Call) error {
	return w.WriteBatch(ctx, BatchOf(calls))
}

// WriteBatch inserts the calls of b in one INSERT, sent in blocks of
// DefaultBlockRows, in the order of the calls table's sorting key
// (CallsSortKey): the server sorts each part it writes, and skips the sort
// and the reordering of every column when the rows arrive sorted, which
// halves its CPU per row (BENCHMARKS.md). It reads the sort keys of every
// call first, then decodes one block of calls at a time, so that the
// decoded calls never take more than a block's memory. A RowError's Index
// is the call's position in b. It is all or nothing: on any error before
// the INSERT completes, the connection is dropped so that the server
// discards the blocks already sent. The column list is always named:
// ClickHouse 18.16 learns no columns from a bare "INSERT INTO calls" and
// the batch then inserts nothing without an error.
func (w *Writer) WriteBatch(ctx context.Context, b *Batch) error {
	n := b.Len()
	if n == 0 {
		return nil
	}
	start := time.Now()
	keys, refs, err := b.sortKeys()
	if err != nil {
		return err
	}
	order := sortOrder(keys)
	batch, err := w.conn.PrepareBatch(ctx, insertCallsSQL)
	if err != nil {
		return fmt.Errorf("prepare insert into calls: %w", err)
	}
	sent := false
	defer func() {
		if !sent {
			// Not Close: Close ends the INSERT normally, which would keep
			// the blocks already flushed.
			_ = batch.Abort()
		}
	}()
	var c Call
	var arena []string
	var row driverRow
	last := 0 // rows of the block not yet flushed
	for flushed := 0; flushed < n; {
		end := min(flushed+w.blockRows, n)
		last = end - flushed
		// Each call is decoded and handed to the driver at once, while its
		// record is in the CPU's cache: decoding a block first and
		// appending it after read every record from memory twice, and the
		// second pass cost a tenth of the insert's CPU (BENCHMARKS.md).
		// The driver copies a row's values before Append returns, but for
		// the LowCardinality ones, which view the batch's records and not
		// c, so c and arena are reused from one call to the next.
		for _, i := range order[flushed:end] {
			// order holds positions in b, which are RowError's Index.
			if arena, err = b.decode(refs[i], &c, arena[:0]); err != nil {
				return &RowError{Index: int(i), Err: err}
			}
			if err := batch.Append(row.of(&c)...); err != nil {
				return &RowError{Index: int(i), Err: err}
			}
		}
		if end < n {
			if w.beforeFlush != nil {
				if err := w.beforeFlush(flushed); err != nil {
					return err
				}
			}
			if err := batch.Flush(); err != nil {
				return fmt.Errorf("send rows %d-%d of %d into calls: %w", flushed, end, n, err)
			}
		}
		flushed = end
	}
	if batch.Rows() != last {
		return fmt.Errorf("batch holds %d of the last %d calls", batch.Rows(), last)
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("insert %d calls into calls: %w", n, err)
	}
	sent = true
	w.m.observeInsert("calls", n, time.Since(start))
	return nil
}

// driverRow builds the rows WriteBatch hands the driver, reusing its
// buffers from one row to the next (the driver copies each row into its
// columns before Append returns).
type driverRow struct {
	row          []any
	keys, values []*string
	// lc holds, per LowCardinality column, the last value and its
	// interface: rows arrive in key order, so a column's value is mostly
	// the one of the row before. (The two array columns cost an allocation
	// each: the driver takes a slice only by value.)
	lc [lowCardColumns]boxed
	// interned holds, per LowCardinality column, one *string per distinct
	// value: the driver keys each such column's dictionary by the
	// interface it is given, twice a row, and a pointer hashes in a few
	// nanoseconds where a string's bytes are hashed and compared. One
	// pointer per value keeps the dictionary to one entry per value. The
	// strings view the records of the Batch being written, which stay
	// valid until WriteBatch returns, as the driver needs until it sends
	// the block.
	interned [lowCardColumns]map[string]*string
}

// lowCardColumns is the number of LowCardinality columns of the calls
// table (schema/002_calls.sql; TestDriverRowMatchesValues counts them).
const lowCardColumns = 12

type boxed struct {
	s string
	v any
}

// box returns column i's *string for s in an interface, the one of the
// row before when the column had the same value there.
func (r *driverRow) box(i int, s string) any {
	b := &r.lc[i]
	if b.v != nil && b.s == s {
		return b.v
	}
	m := r.interned[i]
	if m == nil {
		m = map[string]*string{}
		r.interned[i] = m
	}
	p := m[s]
	if p == nil {
		p = new(string)
		*p = s
		m[s] = p
	}
	b.s, b.v = s, p
	return b.v
}

// of returns the row of c in the column order of insert_calls.sql, in the
// forms the driver converts without allocating: a pointer to the field for
// plain columns (a string, a time or an integer above 255 put in an
// interface is a heap copy; a pointer is not), pointers to the elements for
// the two Array(String) columns (the driver boxes a []string element by
// element), and for the LowCardinality columns, whose driver dictionary is
// keyed by the interface value, one pointer per distinct value (box). The row is valid until the next call of of and
// while c is unchanged; Values gives the same row as plain values.
func (r *driverRow) of(c *Call) []any {
	r.keys = r.keys[:0]
	for i := range c.ArgKeys {
		r.keys = append(r.keys, &c.ArgKeys[i])
	}
	r.values = r.values[:0]
	for i := range c.ArgValues {
		r.values = append(r.values, &c.ArgValues[i])
	}
	r.row = append(r.row[:0],
		&c.Time, &c.TimeMs, &c.DurationMs, r.box(0, c.Tenant), r.box(1, c.Server), r.box(2, c.Tool), &c.SessionID, &c.SessionKey,
		&c.TraceID, &c.RequestID, &c.CallID, r.box(3, c.Client), r.box(4, c.ProtocolVersion), r.box(5, c.Source), r.box(6, c.Side),
		&c.ArgsJSON, &c.ArgsHash, r.keys, r.values,
		&c.HasResponse, &c.IsError, &c.RPCError, &c.RPCCode, &c.RPCMessage, r.box(7, c.ResultType),
		&c.ContentBlocks, &c.TextBytes, &c.HasStructured, &c.Message,
		r.box(8, c.Category), &c.IsFailure, &c.DeclaredRetryable, &c.ExpectedRetryable, r.box(9, c.ClassSource),
		r.box(10, c.ClassRule), &c.ErrorCode, &c.Misflagged, &c.RetryAfterMs, &c.Continuation, &c.ArgsValidated,
		r.box(11, c.TaxonomyVersion), &c.IngestedMs,
	)
	return r.row
}

// CallsSortKey is the ORDER BY of the calls table (schema/002_calls.sql),
// the order in which WriteBatch sends rows; a test holds the two together.
const CallsSortKey = "tenant, server, tool, session_key, ts_ms, call_id"

// sortOrder returns the indexes of keys ordered by CallsSortKey. The
// (tenant, server, tool) prefix takes few values in a batch: each distinct
// prefix is ranked once, the calls are put in their prefix's bucket in
// rank order (a counting sort), and each bucket is sorted by session, time
// and id apart. A batch of many prefixes then compares a fraction of the
// pairs that one sort of the whole batch compared.
func sortOrder(calls []sortKey) []int32 {
	type prefix struct{ tenant, server, tool string }
	type key struct {
		i       int32
		ts      int64
		id      uint64
		session string
	}
	ranks := make(map[prefix]uint32)
	var prefixes []prefix
	seen := make([]uint32, len(calls)) // each call's prefix, by first-seen number
	for i := range calls {
		c := &calls[i]
		p := prefix{c.tenant, c.server, c.tool}
		r, ok := ranks[p]
		if !ok {
			r = uint32(len(prefixes))
			ranks[p] = r
			prefixes = append(prefixes, p)
		}
		seen[i] = r
	}
	// Turn first-seen numbers into ranks in key order.
	byKey := make([]uint32, len(prefixes))
	for i := range byKey {
		byKey[i] = uint32(i)
	}
	slices.SortFunc(byKey, func(a, b uint32) int {
		pa, pb := prefixes[a], prefixes[b]
		if c := cmp.Compare(pa.tenant, pb.tenant); c != 0 {
			return c
		}
		if c := cmp.Compare(pa.server, pb.server); c != 0 {
			return c
		}
		return cmp.Compare(pa.tool, pb.tool)
	})
	rank := make([]uint32, len(prefixes))
	for r, first := range byKey {
		rank[first] = uint32(r)
	}
	// Bucket bounds by rank, then the calls into their buckets.
	start := make([]int32, len(prefixes)+1)
	for i := range seen {
		seen[i] = rank[seen[i]]
		start[seen[i]+1]++
	}
	for r := range prefixes {
		start[r+1] += start[r]
	}
	next := slices.Clone(start[:len(prefixes)])
	keys := make([]key, len(calls))
	for i := range calls {
		c := &calls[i]
		r := seen[i]
		keys[next[r]] = key{i: int32(i), ts: c.ts, id: c.id, session: c.session}
		next[r]++
	}
	for r := range prefixes {
		slices.SortFunc(keys[start[r]:start[r+1]], func(a, b key) int {
			if c := cmp.Compare(a.session, b.session); c != 0 {
				return c
			}
			if a.ts != b.ts {
				return cmp.Compare(a.ts, b.ts)
			}
			return cmp.Compare(a.id, b.id)
		})
	}
	order := make([]int32, len(keys))
	for k := range keys {
		order[k] = keys[k].i
	}
	return order
}

// WriteDeadLetters inserts rejected input in one batch.
func (w *Writer) WriteDeadLetters(ctx context.Context, dls []DeadLetter) error {
	if len(dls) == 0 {
		return nil
	}
	start := time.Now()
	batch, err := w.conn.PrepareBatch(ctx, insertDeadLettersSQL)
	if err != nil {
		return fmt.Errorf("prepare insert into dead_letters: %w", err)
	}
	defer batch.Close() //nolint:errcheck // releases the connection when Send is not reached
	for i, d := range dls {
		if err := batch.Append(d.Received, d.Received.UnixMilli(), d.Tenant, d.Source, d.Line, d.Reason, d.Payload); err != nil {
			return fmt.Errorf("append dead letter %d: %w", i, err)
		}
	}
	if batch.Rows() != len(dls) {
		return fmt.Errorf("batch holds %d of %d dead letters", batch.Rows(), len(dls))
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("insert %d rows into dead_letters: %w", len(dls), err)
	}
	w.m.observeInsert("dead_letters", len(dls), time.Since(start))
	return nil
}
