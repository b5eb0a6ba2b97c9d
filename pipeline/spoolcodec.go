package pipeline

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unsafe"
)

// The payload of one spool record is a version byte, the call and dead
// letter counts as uvarints, then each call and each dead letter field by
// field in declaration order: strings as a uvarint length and bytes,
// integers as varints (zigzag for signed), times as unix seconds and
// nanoseconds (UTC). It is written and read only by this file; a test
// round-trips a Call with every field set, so a field added to Call without
// a line here fails it.
//
// Version 2 appends ArgsValidated to each call. Version 1 records, which a
// spool written before it may still hold, decode with ArgsValidated 0.

const (
	recordVersion  = 2
	oldestVersion  = 1 // the oldest version the readers still decode
	versionArgsVal = 2 // the first version with ArgsValidated
)

// knownVersion reports whether the readers decode record version v.
func knownVersion(v byte) bool { return v >= oldestVersion && v <= recordVersion }

// appendRecord encodes calls and dead letters as one record payload
// appended to b. With offs set, it appends the offset of each call in the
// payload (from the payload's first byte) to *offs.
func appendRecord(b []byte, calls []Call, dead []DeadLetter, offs *[]uint32) []byte {
	start := len(b)
	b = append(b, recordVersion)
	b = binary.AppendUvarint(b, uint64(len(calls)))
	b = binary.AppendUvarint(b, uint64(len(dead)))
	for i := range calls {
		if offs != nil {
			*offs = append(*offs, uint32(len(b)-start))
		}
		b = appendCall(b, &calls[i])
	}
	for i := range dead {
		d := &dead[i]
		b = appendTime(b, d.Received)
		b = appendStr(b, d.Tenant)
		b = appendStr(b, d.Source)
		b = binary.AppendUvarint(b, uint64(d.Line))
		b = appendStr(b, d.Reason)
		b = appendStr(b, d.Payload)
	}
	return b
}

func appendCall(b []byte, c *Call) []byte {
	b = appendTime(b, c.Time)
	b = binary.AppendVarint(b, c.TimeMs)
	b = binary.AppendVarint(b, c.DurationMs)
	for _, s := range [...]string{c.Tenant, c.Server, c.Tool, c.SessionID, c.SessionKey, c.TraceID, c.RequestID} {
		b = appendStr(b, s)
	}
	b = binary.AppendUvarint(b, c.CallID)
	for _, s := range [...]string{c.Client, c.ProtocolVersion, c.Source, c.Side, c.ArgsJSON} {
		b = appendStr(b, s)
	}
	b = binary.AppendUvarint(b, c.ArgsHash)
	b = appendStrs(b, c.ArgKeys)
	b = appendStrs(b, c.ArgValues)
	b = append(b, c.HasResponse, byte(c.IsError), c.RPCError)
	b = binary.AppendVarint(b, c.RPCCode)
	b = appendStr(b, c.RPCMessage)
	b = appendStr(b, c.ResultType)
	b = binary.AppendVarint(b, int64(c.ContentBlocks))
	b = binary.AppendVarint(b, c.TextBytes)
	b = append(b, c.HasStructured)
	b = appendStr(b, c.Message)
	b = appendStr(b, c.Category)
	b = append(b, c.IsFailure, byte(c.DeclaredRetryable), byte(c.ExpectedRetryable))
	b = appendStr(b, c.ClassSource)
	b = appendStr(b, c.ClassRule)
	b = appendStr(b, c.ErrorCode)
	b = append(b, c.Misflagged)
	b = binary.AppendVarint(b, c.RetryAfterMs)
	b = append(b, c.Continuation)
	b = appendStr(b, c.TaxonomyVersion)
	b = binary.AppendVarint(b, c.IngestedMs)
	b = append(b, c.ArgsValidated)
	return b
}

func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStrs(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, 0)
	}
	// Length+1, so that nil and empty slices stay distinct.
	b = binary.AppendUvarint(b, uint64(len(ss))+1)
	for _, s := range ss {
		b = appendStr(b, s)
	}
	return b
}

// recordCalls returns the number of calls in a record payload without
// decoding them.
func recordCalls(p []byte) (int, error) {
	if len(p) == 0 || !knownVersion(p[0]) {
		return 0, errBadRecord
	}
	n, k := binary.Uvarint(p[1:])
	if k <= 0 || n > math.MaxInt32 {
		return 0, errBadRecord
	}
	return int(n), nil
}

var errBadRecord = errors.New("malformed spool record")

// recordReader decodes one record payload; the first error sticks. With
// view set, strings are views of p instead of copies, and string slices are
// cut from arena. With offs set, record appends each call's offset to it;
// with check set, it decodes every call into one Call and keeps none.
type recordReader struct {
	p       []byte
	version byte // the record's version byte
	err     error
	view    bool
	check   bool
	arena   []string
	offs    *[]uint32
}

// decodeRecord decodes a payload written by appendRecord, appending to
// calls and dead. The strings are copies: p may be reused afterwards.
func decodeRecord(p []byte, calls []Call, dead []DeadLetter) ([]Call, []DeadLetter, error) {
	r := &recordReader{}
	return r.record(p, calls, dead)
}

// checkRecord reads the record payload p through as decodeRecord does,
// without keeping its calls, and returns each call's offset in p (as
// appendRecord gives them) and the record's dead letters, as copies: p may
// be reused. The Batcher checks a record read back from the spool so before
// it queues a copy of it.
func checkRecord(p []byte) ([]uint32, []DeadLetter, error) {
	var offs []uint32
	r := &recordReader{view: true, check: true, offs: &offs}
	_, dead, err := r.record(p, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	for i := range dead {
		d := &dead[i]
		d.Tenant, d.Source = strings.Clone(d.Tenant), strings.Clone(d.Source)
		d.Reason, d.Payload = strings.Clone(d.Reason), strings.Clone(d.Payload)
	}
	return offs, dead, nil
}

// decodeCallAt decodes into c the call at offset off of the record payload
// p (an offset appendRecord or checkRecord gave), copying nothing: its
// strings are views of p, and its ArgKeys and ArgValues are cut from arena,
// which it returns grown. The Batcher's queued records are read this way,
// one INSERT block at a time, and are never written again.
func decodeCallAt(p []byte, off uint32, c *Call, arena []string) ([]string, error) {
	if uint64(off) >= uint64(len(p)) {
		return arena, fmt.Errorf("%w: call offset %d of %d bytes", errBadRecord, off, len(p))
	}
	if !knownVersion(p[0]) {
		return arena, fmt.Errorf("%w: version %d", errBadRecord, p[0])
	}
	r := &recordReader{p: p[off:], version: p[0], view: true, arena: arena}
	r.call(c)
	return r.arena, r.err
}

// sortKey is the part of a call that the calls table's ORDER BY reads
// (CallsSortKey), its strings views of a record.
type sortKey struct {
	tenant, server, tool, session string
	ts                            int64
	id                            uint64
}

// sortKeyAt reads the sort key of the call at offset off of p, which sits
// in its first eleven fields.
func sortKeyAt(p []byte, off uint32) (sortKey, error) {
	if uint64(off) >= uint64(len(p)) {
		return sortKey{}, fmt.Errorf("%w: call offset %d of %d bytes", errBadRecord, off, len(p))
	}
	r := &recordReader{p: p[off:], view: true}
	var k sortKey
	r.time()
	k.ts = r.varint()
	r.varint() // duration
	k.tenant, k.server, k.tool = r.str(), r.str(), r.str()
	r.str() // session id
	k.session = r.str()
	r.str() // trace id
	r.str() // request id
	k.id = r.uvarint()
	return k, r.err
}

// header checks p's version and reads its counts into r.
func (r *recordReader) header(p []byte) (nc, nd uint64, err error) {
	if len(p) == 0 || !knownVersion(p[0]) {
		return 0, 0, fmt.Errorf("%w: version %v", errBadRecord, p[:min(len(p), 1)])
	}
	r.version = p[0]
	r.p = p[1:]
	nc, nd = r.uvarint(), r.uvarint()
	// Each call takes at least 40 bytes and each dead letter 6 (47 and 12
	// when empty): bound the counts by the payload before allocating, so
	// that a damaged count cannot ask for 500 bytes of Calls per byte read.
	if r.err != nil || nc > uint64(len(r.p))/40 || nd > uint64(len(r.p))/6 {
		return 0, 0, fmt.Errorf("%w: bad counts", errBadRecord)
	}
	return nc, nd, nil
}

func (r *recordReader) record(p []byte, calls []Call, dead []DeadLetter) ([]Call, []DeadLetter, error) {
	nc, nd, err := r.header(p)
	if err != nil {
		return calls, dead, err
	}
	var one Call
	if !r.check {
		calls = growCalls(calls, int(nc))
	}
	for range nc {
		if r.offs != nil {
			*r.offs = append(*r.offs, uint32(len(p)-len(r.p)))
		}
		c := &one
		if r.check {
			r.arena = r.arena[:0]
		} else {
			calls = append(calls, Call{})
			c = &calls[len(calls)-1]
		}
		r.call(c)
	}
	for range nd {
		var d DeadLetter
		d.Received = r.time()
		d.Tenant, d.Source = r.str(), r.str()
		d.Line = uint32(r.uvarint())
		d.Reason, d.Payload = r.str(), r.str()
		dead = append(dead, d)
	}
	if r.err == nil && len(r.p) != 0 {
		r.err = fmt.Errorf("%w: %d trailing bytes", errBadRecord, len(r.p))
	}
	return calls, dead, r.err
}

func growCalls(s []Call, n int) []Call {
	if cap(s)-len(s) >= n {
		return s
	}
	out := make([]Call, len(s), len(s)+n)
	copy(out, s)
	return out
}

func (r *recordReader) call(c *Call) {
	c.Time = r.time()
	c.TimeMs, c.DurationMs = r.varint(), r.varint()
	c.Tenant, c.Server, c.Tool = r.str(), r.str(), r.str()
	c.SessionID, c.SessionKey, c.TraceID, c.RequestID = r.str(), r.str(), r.str(), r.str()
	c.CallID = r.uvarint()
	c.Client, c.ProtocolVersion, c.Source, c.Side, c.ArgsJSON = r.str(), r.str(), r.str(), r.str(), r.str()
	c.ArgsHash = r.uvarint()
	c.ArgKeys, c.ArgValues = r.strs(), r.strs()
	c.HasResponse, c.IsError, c.RPCError = r.byte(), int8(r.byte()), r.byte()
	c.RPCCode = r.varint()
	c.RPCMessage, c.ResultType = r.str(), r.str()
	c.ContentBlocks = int32(r.varint())
	c.TextBytes = r.varint()
	c.HasStructured = r.byte()
	c.Message, c.Category = r.str(), r.str()
	c.IsFailure, c.DeclaredRetryable, c.ExpectedRetryable = r.byte(), int8(r.byte()), int8(r.byte())
	c.ClassSource, c.ClassRule, c.ErrorCode = r.str(), r.str(), r.str()
	c.Misflagged = r.byte()
	c.RetryAfterMs = r.varint()
	c.Continuation = r.byte()
	c.TaxonomyVersion = r.str()
	c.IngestedMs = r.varint()
	c.ArgsValidated = 0
	if r.version >= versionArgsVal {
		c.ArgsValidated = r.byte()
	}
}

func (r *recordReader) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("%w: truncated", errBadRecord)
	}
	r.p = nil
}

func (r *recordReader) byte() byte {
	if len(r.p) < 1 {
		r.fail()
		return 0
	}
	v := r.p[0]
	r.p = r.p[1:]
	return v
}

// uvarint reads an unsigned varint. Most values of a record (string
// lengths, small counts and codes) take one byte, read without
// binary.Uvarint's loop.
func (r *recordReader) uvarint() uint64 {
	if len(r.p) > 0 && r.p[0] < 0x80 {
		v := r.p[0]
		r.p = r.p[1:]
		return uint64(v)
	}
	v, n := binary.Uvarint(r.p)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.p = r.p[n:]
	return v
}

// varint reads a signed (zig-zag) varint, one byte as uvarint does.
func (r *recordReader) varint() int64 {
	if len(r.p) > 0 && r.p[0] < 0x80 {
		u := r.p[0]
		r.p = r.p[1:]
		return int64(u>>1) ^ -int64(u&1)
	}
	v, n := binary.Varint(r.p)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.p = r.p[n:]
	return v
}

func (r *recordReader) time() time.Time {
	sec, ns := r.varint(), r.uvarint()
	if ns >= 1e9 {
		r.fail()
		return time.Time{}
	}
	return time.Unix(sec, int64(ns)).UTC()
}

func (r *recordReader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.p)) {
		r.fail()
		return ""
	}
	var s string
	switch {
	case n == 0:
	case r.view:
		s = unsafe.String(&r.p[0], n)
	default:
		s = string(r.p[:n])
	}
	r.p = r.p[n:]
	return s
}

func (r *recordReader) strs() []string {
	n := r.uvarint()
	if n == 0 {
		return nil
	}
	n--
	if n > uint64(len(r.p)) {
		r.fail()
		return nil
	}
	if !r.view {
		out := make([]string, n)
		for i := range out {
			out[i] = r.str()
		}
		return out
	}
	if n == 0 {
		return []string{}
	}
	start := len(r.arena)
	for range n {
		r.arena = append(r.arena, r.str())
	}
	return r.arena[start:len(r.arena):len(r.arena)]
}
