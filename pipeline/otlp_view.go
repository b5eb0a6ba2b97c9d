package pipeline

import (
	"math"
	"slices"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The decoder reads a span through a spanView, the few fields it uses,
// so that one decoding logic serves both sources of spans: pdata's
// ptrace.Traces (gRPC, OTLP JSON, and protobuf bodies the wire reader
// leaves to pdata) and the wire reader of otlp_wire.go, which reads
// protobuf bodies without building pdata's objects. A view answers every
// question exactly as the pdata objects it stands for would.

// spanView is one span with its resource's attributes and its scope's
// name. Its strings belong to the source it was read from.
type spanView struct {
	res        attrList // resource attributes
	scopeName  string
	name       string
	kind       ptrace.SpanKind
	trace      pcommon.TraceID
	span       pcommon.SpanID
	parent     pcommon.SpanID
	start, end uint64 // unix nanoseconds
	statusCode ptrace.StatusCode
	statusMsg  string
	attrs      attrList
	events     []eventView
}

// eventView is a span event's name and attributes.
type eventView struct {
	name  string
	attrs attrList
}

// attrList is a list of attributes in their order on the wire. Duplicate
// keys are kept; get answers with the first, as pcommon.Map.Get does.
type attrList []attr

type attr struct {
	key string
	val attrValue
}

// attrValue is an attribute value. It has pcommon.Value's accessors, with
// the same answers: scalars are held here, and map, slice, bytes and empty
// values keep their pcommon.Value (the wire reader leaves spans with those
// to pdata).
type attrValue struct {
	typ pcommon.ValueType
	str string
	num uint64 // int64 bits, float64 bits, or 1 for true
	pv  pcommon.Value
}

func (l attrList) get(key string) (attrValue, bool) {
	for i := range l {
		if l[i].key == key {
			return l[i].val, true
		}
	}
	return attrValue{}, false
}

func (v attrValue) Type() pcommon.ValueType { return v.typ }

// Str is the string of a string value, "" for any other type.
func (v attrValue) Str() string {
	if v.typ != pcommon.ValueTypeStr {
		return ""
	}
	return v.str
}

// Int is the integer of an int value, 0 for any other type.
func (v attrValue) Int() int64 {
	if v.typ != pcommon.ValueTypeInt {
		return 0
	}
	return int64(v.num)
}

// Double is the number of a double value, 0 for any other type.
func (v attrValue) Double() float64 {
	if v.typ != pcommon.ValueTypeDouble {
		return 0
	}
	return math.Float64frombits(v.num)
}

// Bool is the flag of a bool value, false for any other type.
func (v attrValue) Bool() bool { return v.typ == pcommon.ValueTypeBool && v.num == 1 }

// AsString renders the value as pcommon.Value.AsString does.
func (v attrValue) AsString() string {
	switch v.typ {
	case pcommon.ValueTypeStr:
		return v.str
	case pcommon.ValueTypeBool:
		return strconv.FormatBool(v.num == 1)
	case pcommon.ValueTypeInt:
		return strconv.FormatInt(int64(v.num), 10)
	case pcommon.ValueTypeDouble:
		return pcommon.NewValueDouble(math.Float64frombits(v.num)).AsString()
	}
	return v.pv.AsString()
}

// valueOf is the attrValue of a pdata value.
func valueOf(v pcommon.Value) attrValue {
	switch t := v.Type(); t {
	case pcommon.ValueTypeStr:
		return attrValue{typ: t, str: v.Str()}
	case pcommon.ValueTypeBool:
		return attrValue{typ: t, num: uint64(b2i(v.Bool()))}
	case pcommon.ValueTypeInt:
		return attrValue{typ: t, num: uint64(v.Int())}
	case pcommon.ValueTypeDouble:
		return attrValue{typ: t, num: math.Float64bits(v.Double())}
	default:
		return attrValue{typ: t, pv: v}
	}
}

// appendAttrs appends the attributes of m to dst.
func appendAttrs(dst attrList, m pcommon.Map) attrList {
	dst = slices.Grow(dst, m.Len())
	for k, v := range m.All() {
		dst = append(dst, attr{k, valueOf(v)})
	}
	return dst
}

// pdataViews fills views of pdata spans, reusing its memory from one span
// to the next. It is used by one goroutine.
type pdataViews struct {
	res    attrList
	attrs  attrList
	events []eventView
	evAttr attrList
}

// resource makes the resource attributes of the spans that follow.
func (p *pdataViews) resource(res pcommon.Resource) {
	p.res = appendAttrs(p.res[:0], res.Attributes())
}

// view fills v with sp, of the last resource given and of scope. v is
// valid until the next call.
func (p *pdataViews) view(v *spanView, scope pcommon.InstrumentationScope, sp ptrace.Span) {
	p.attrs = appendAttrs(p.attrs[:0], sp.Attributes())
	p.events, p.evAttr = p.events[:0], p.evAttr[:0]
	evs := sp.Events()
	for i := 0; i < evs.Len(); i++ {
		ev := evs.At(i)
		from := len(p.evAttr)
		p.evAttr = appendAttrs(p.evAttr, ev.Attributes())
		p.events = append(p.events, eventView{name: ev.Name(), attrs: p.evAttr[from:len(p.evAttr):len(p.evAttr)]})
	}
	st := sp.Status()
	*v = spanView{res: p.res, scopeName: scope.Name(), name: sp.Name(), kind: sp.Kind(),
		trace: sp.TraceID(), span: sp.SpanID(), parent: sp.ParentSpanID(),
		start: uint64(sp.StartTimestamp()), end: uint64(sp.EndTimestamp()),
		statusCode: st.Code(), statusMsg: st.Message(), attrs: p.attrs, events: p.events}
}
