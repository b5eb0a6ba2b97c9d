package pipeline

import (
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/protobuf/encoding/protowire"
)

// wireTraces reads a protobuf ExportTraceServiceRequest into spanViews
// without pdata's objects: pdata allocates about 24 objects per span of a
// typical request (a KeyValue and an AnyValue per attribute, every string
// copied), which were most of the OTLP receiver's garbage. The views'
// strings alias the body.
//
// It reads a subset of what pdata reads, and for that subset answers as
// pdata would: repeated fields append in order, a scalar field given twice
// keeps the last value, ids are 0 or their full size. read reports false,
// and the caller lets pdata read the body, for everything else: anything
// pdata rejects (a bad tag, length or wire type, an id of the wrong size),
// and what it accepts but the subset leaves out (unknown fields, links,
// entity refs, a message field given twice, attribute values that are not
// a string, bool, int or double). Those bodies decode as before, only
// slower. TestOTLPWireMatchesPdata and FuzzOTLPWire compare the two.
type wireTraces struct {
	views   []spanView
	spans   []wireSpan
	attrs   attrList // attributes of spans and resources
	evAttrs attrList // attributes of events
	events  []wireEvent
	res     []wireRange // attributes of each resource
	scopes  []string    // name of each scope
}

type wireRange struct{ from, to int }

// wireSpan is a span read, with indexes into wireTraces until every
// array stopped growing.
type wireSpan struct {
	v             spanView
	res, scope    int
	attrs, events wireRange
}

type wireEvent struct {
	name  string
	attrs wireRange
}

// read reads body into w.views, reusing w's memory, and reports whether
// body is in the subset (see wireTraces). The views are valid until the
// next read, and as long as body is neither freed nor written.
func (w *wireTraces) read(body []byte) bool {
	w.views, w.spans, w.attrs, w.evAttrs = w.views[:0], w.spans[:0], w.attrs[:0], w.evAttrs[:0]
	w.events, w.res, w.scopes = w.events[:0], w.res[:0], w.scopes[:0]
	for len(body) > 0 {
		num, typ, n := protowire.ConsumeTag(body)
		if n < 0 || num != 1 || typ != protowire.BytesType {
			return false
		}
		body = body[n:]
		rs, n := protowire.ConsumeBytes(body)
		if n < 0 || !w.resourceSpans(rs) {
			return false
		}
		body = body[n:]
	}
	for i := range w.spans {
		s := &w.spans[i]
		r := w.res[s.res]
		s.v.res = w.attrs[r.from:r.to:r.to]
		s.v.scopeName = w.scopes[s.scope]
		s.v.attrs = w.attrs[s.attrs.from:s.attrs.to:s.attrs.to]
		if s.events.to > s.events.from {
			// Only spans with events make views of them: views of
			// events are few, and w.events is not reused for them.
			evs := make([]eventView, 0, s.events.to-s.events.from)
			for _, e := range w.events[s.events.from:s.events.to] {
				evs = append(evs, eventView{name: e.name, attrs: w.evAttrs[e.attrs.from:e.attrs.to:e.attrs.to]})
			}
			s.v.events = evs
		}
		w.views = append(w.views, s.v)
	}
	return true
}

// field reads one field of b: its tag, and its value (the bytes of a
// length-delimited value, the encoded bytes of any other). ok is false for
// a malformed field, a group, or a wire type that does not exist.
func field(b []byte) (num protowire.Number, typ protowire.Type, val []byte, rest []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return 0, 0, nil, nil, false
	}
	b = b[n:]
	switch typ {
	case protowire.BytesType:
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return 0, 0, nil, nil, false
		}
		return num, typ, v, b[n:], true
	case protowire.VarintType:
		_, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return 0, 0, nil, nil, false
		}
		return num, typ, b[:n], b[n:], true
	case protowire.Fixed64Type:
		if len(b) < 8 {
			return 0, 0, nil, nil, false
		}
		return num, typ, b[:8], b[8:], true
	case protowire.Fixed32Type:
		if len(b) < 4 {
			return 0, 0, nil, nil, false
		}
		return num, typ, b[:4], b[4:], true
	}
	return 0, 0, nil, nil, false // groups, and the wire types that do not exist
}

func varint(v []byte) uint64 {
	x, _ := protowire.ConsumeVarint(v) // field checked it
	return x
}

func fixed64(v []byte) uint64 {
	x, _ := protowire.ConsumeFixed64(v) // field checked its size
	return x
}

// wireString returns the bytes of b as a string without copying them.
// Safe because the body that b is part of is neither written nor freed
// while the request is decoded (the receiver's scratch memory is reused
// only by a later request), and no string read from it outlives the
// request: spanFacts.detach copies the facts that the pairer keeps, and
// everything else is copied into Calls and dead letters (see
// OTLP.consumeProto).
func wireString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func (w *wireTraces) resourceSpans(b []byte) bool {
	res := len(w.res)
	w.res = append(w.res, wireRange{})
	seenResource := false
	for len(b) > 0 {
		num, typ, v, rest, ok := field(b)
		if !ok {
			return false
		}
		b = rest
		switch {
		case num == 1 && typ == protowire.BytesType && !seenResource:
			seenResource = true
			from := len(w.attrs)
			if !w.resource(v) {
				return false
			}
			w.res[res] = wireRange{from, len(w.attrs)}
		case num == 2 && typ == protowire.BytesType:
			if !w.scopeSpans(v, res) {
				return false
			}
		case num == 3 && typ == protowire.BytesType: // schema_url
		default:
			return false
		}
	}
	return true
}

func (w *wireTraces) resource(b []byte) bool {
	for len(b) > 0 {
		num, typ, v, rest, ok := field(b)
		if !ok {
			return false
		}
		b = rest
		switch {
		case num == 1 && typ == protowire.BytesType:
			if !w.keyValue(v, &w.attrs) {
				return false
			}
		case num == 2 && typ == protowire.VarintType: // dropped_attributes_count
		default:
			return false
		}
	}
	return true
}

func (w *wireTraces) scopeSpans(b []byte, res int) bool {
	scope := len(w.scopes)
	w.scopes = append(w.scopes, "")
	seenScope := false
	for len(b) > 0 {
		num, typ, v, rest, ok := field(b)
		if !ok {
			return false
		}
		b = rest
		switch {
		case num == 1 && typ == protowire.BytesType && !seenScope:
			seenScope = true
			name, ok := w.scope(v)
			if !ok {
				return false
			}
			w.scopes[scope] = name
		case num == 2 && typ == protowire.BytesType:
			if !w.span(v, res, scope) {
				return false
			}
		case num == 3 && typ == protowire.BytesType: // schema_url
		default:
			return false
		}
	}
	return true
}

// scope returns the scope's name; its attributes are checked and dropped.
func (w *wireTraces) scope(b []byte) (string, bool) {
	name := ""
	from := len(w.attrs)
	defer func() { w.attrs = w.attrs[:from] }()
	for len(b) > 0 {
		num, typ, v, rest, ok := field(b)
		if !ok {
			return "", false
		}
		b = rest
		switch {
		case num == 1 && typ == protowire.BytesType:
			name = wireString(v)
		case num == 2 && typ == protowire.BytesType: // version
		case num == 3 && typ == protowire.BytesType:
			if !w.keyValue(v, &w.attrs) {
				return "", false
			}
		case num == 4 && typ == protowire.VarintType: // dropped_attributes_count
		default:
			return "", false
		}
	}
	return name, true
}

func (w *wireTraces) span(b []byte, res, scope int) bool {
	s := wireSpan{res: res, scope: scope}
	s.attrs.from, s.attrs.to = len(w.attrs), len(w.attrs)
	s.events.from, s.events.to = len(w.events), len(w.events)
	seenStatus := false
	for len(b) > 0 {
		num, typ, v, rest, ok := field(b)
		if !ok {
			return false
		}
		b = rest
		switch {
		case num == 1 && typ == protowire.BytesType:
			switch len(v) {
			case 0:
				s.v.trace = pcommon.TraceID{}
			case 16:
				s.v.trace = pcommon.TraceID(v)
			default:
				return false
			}
		case num == 2 && typ == protowire.BytesType:
			if !spanID(&s.v.span, v) {
				return false
			}
		case num == 4 && typ == protowire.BytesType:
			if !spanID(&s.v.parent, v) {
				return false
			}
		case num == 3 && typ == protowire.BytesType: // trace_state
		case num == 16 && typ == protowire.Fixed32Type: // flags
		case num == 5 && typ == protowire.BytesType:
			s.v.name = wireString(v)
		case num == 6 && typ == protowire.VarintType:
			s.v.kind = ptrace.SpanKind(int32(varint(v))) //nolint:gosec // pdata truncates the same way
		case num == 7 && typ == protowire.Fixed64Type:
			s.v.start = fixed64(v)
		case num == 8 && typ == protowire.Fixed64Type:
			s.v.end = fixed64(v)
		case num == 9 && typ == protowire.BytesType:
			if !w.keyValue(v, &w.attrs) {
				return false
			}
			s.attrs.to = len(w.attrs)
		case num == 11 && typ == protowire.BytesType:
			if !w.event(v) {
				return false
			}
			s.events.to = len(w.events)
		case (num == 10 || num == 12 || num == 14) && typ == protowire.VarintType: // dropped counts
		case num == 15 && typ == protowire.BytesType && !seenStatus:
			seenStatus = true
			if !w.status(&s.v, v) {
				return false
			}
		default:
			return false
		}
	}
	w.spans = append(w.spans, s)
	return true
}

func spanID(dst *pcommon.SpanID, v []byte) bool {
	switch len(v) {
	case 0:
		*dst = pcommon.SpanID{}
	case 8:
		*dst = pcommon.SpanID(v)
	default:
		return false
	}
	return true
}

func (w *wireTraces) status(v *spanView, b []byte) bool {
	for len(b) > 0 {
		num, typ, val, rest, ok := field(b)
		if !ok {
			return false
		}
		b = rest
		switch {
		case num == 2 && typ == protowire.BytesType:
			v.statusMsg = wireString(val)
		case num == 3 && typ == protowire.VarintType:
			v.statusCode = ptrace.StatusCode(int32(varint(val))) //nolint:gosec // pdata truncates the same way
		default:
			return false
		}
	}
	return true
}

func (w *wireTraces) event(b []byte) bool {
	e := wireEvent{attrs: wireRange{len(w.evAttrs), len(w.evAttrs)}}
	for len(b) > 0 {
		num, typ, v, rest, ok := field(b)
		if !ok {
			return false
		}
		b = rest
		switch {
		case num == 1 && typ == protowire.Fixed64Type: // time_unix_nano
		case num == 2 && typ == protowire.BytesType:
			e.name = wireString(v)
		case num == 3 && typ == protowire.BytesType:
			if !w.keyValue(v, &w.evAttrs) {
				return false
			}
			e.attrs.to = len(w.evAttrs)
		case num == 4 && typ == protowire.VarintType: // dropped_attributes_count
		default:
			return false
		}
	}
	w.events = append(w.events, e)
	return true
}

// keyValue appends one attribute to dst. A KeyValue without a value (an
// empty value) is outside the subset.
func (w *wireTraces) keyValue(b []byte, dst *attrList) bool {
	var a attr
	seenValue := false
	for len(b) > 0 {
		num, typ, v, rest, ok := field(b)
		if !ok {
			return false
		}
		b = rest
		switch {
		case num == 1 && typ == protowire.BytesType:
			a.key = wireString(v)
		case num == 2 && typ == protowire.BytesType && !seenValue:
			seenValue = true
			if !anyValue(&a.val, v) {
				return false
			}
		default:
			return false
		}
	}
	if !seenValue {
		return false
	}
	*dst = append(*dst, a)
	return true
}

// anyValue reads an AnyValue holding exactly one string, bool, int or
// double.
func anyValue(dst *attrValue, b []byte) bool {
	seen := false
	for len(b) > 0 {
		num, typ, v, rest, ok := field(b)
		if !ok || seen {
			return false
		}
		b = rest
		seen = true
		switch {
		case num == 1 && typ == protowire.BytesType:
			*dst = attrValue{typ: pcommon.ValueTypeStr, str: wireString(v)}
		case num == 2 && typ == protowire.VarintType:
			n := uint64(0)
			if varint(v) != 0 {
				n = 1
			}
			*dst = attrValue{typ: pcommon.ValueTypeBool, num: n}
		case num == 3 && typ == protowire.VarintType:
			*dst = attrValue{typ: pcommon.ValueTypeInt, num: varint(v)}
		case num == 4 && typ == protowire.Fixed64Type:
			*dst = attrValue{typ: pcommon.ValueTypeDouble, num: fixed64(v)}
		default:
			return false
		}
	}
	return seen
}
