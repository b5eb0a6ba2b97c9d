package pipeline

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// quickSchema is a JSON Schema built only of keywords whose meaning is the
// same in every draft it is used for, read so that a value can be found
// valid in one pass over its JSON text: no Go value is built and the
// validator is not run. accepts answers only "valid" or "cannot tell": a
// value it does not accept goes to the full validator (compiledSchema), which
// finds the violations, so a schema or a value it does not understand costs
// nothing but the pass. accepts must never accept what the validator
// refuses; FuzzQuickAccepts holds it to that on random schemas and values.
//
// Keywords read: type, enum (strings), minLength, maxLength, pattern,
// minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers), required,
// properties, additionalProperties, items (a schema), minItems, maxItems,
// allOf, anyOf (Pydantic's optional fields: a type or null); annotations
// (title, description, default, examples, $comment, deprecated, readOnly,
// writeOnly, $schema, $id, and format under 2020-12, which does not assert
// it) are skipped. Any other keyword, a $ref among them, leaves the schema
// without a quick form; an anyOf branch without one is never the branch
// that accepts.
type quickSchema struct {
	any      bool  // true: every value (the schema true, or {})
	types    uint8 // allowed types (typeObject...); 0: any type
	enum     []string
	hasEnum  bool
	minLen   int // -1: none
	maxLen   int
	pattern  *regexp.Regexp
	bounds   []quickBound
	props    map[string]*quickSchema
	required []string
	noExtra  bool         // additionalProperties false
	extra    *quickSchema // additionalProperties as a schema; nil: any
	items    *quickSchema // nil: any
	minItems int          // -1: none
	maxItems int
	allOf    []*quickSchema // each must accept the value
	anyOf    []*quickSchema // one must; the branches without a quick form left out
	hasAnyOf bool
}

const (
	typeObject = 1 << iota
	typeArray
	typeString
	typeNumber
	typeInteger
	typeBoolean
	typeNull
)

var quickTypes = map[string]uint8{"object": typeObject, "array": typeArray, "string": typeString,
	"number": typeNumber, "integer": typeInteger, "boolean": typeBoolean, "null": typeNull}

// quickBound is one of minimum, maximum, exclusiveMinimum, exclusiveMaximum.
type quickBound struct {
	upper, exclusive bool
	isInt            bool // the bound is an integer literal of at most 18 digits
	i                int64
	f                float64
}

// quickDrafts are the $schema values whose keywords above mean what
// quickSchema reads (draft-04's exclusive bounds are booleans: not here).
var quickDrafts = map[string]bool{
	"": true,
	"https://json-schema.org/draft/2020-12/schema": true, "https://json-schema.org/draft/2019-09/schema": true,
	"http://json-schema.org/draft-07/schema#": true, "http://json-schema.org/draft-07/schema": true,
	"http://json-schema.org/draft-06/schema#": true, "http://json-schema.org/draft-06/schema": true,
}

// compileQuick returns the quick form of doc, a schema document as
// jsonschema.UnmarshalJSON returns it, or nil when it has none.
func compileQuick(doc any) *quickSchema {
	formatNotes := true // 2020-12: format is an annotation (compileDoc does not assert it)
	if m, ok := doc.(map[string]any); ok {
		d, _ := m["$schema"].(string)
		if _, has := m["$schema"]; has && !quickDrafts[d] {
			return nil
		}
		formatNotes = d == "" || d == "https://json-schema.org/draft/2020-12/schema"
	}
	q, ok := quickFrom(doc, 0, formatNotes)
	if !ok {
		return nil
	}
	return q
}

func quickFrom(doc any, depth int, formatNotes bool) (*quickSchema, bool) {
	if depth > 32 {
		return nil, false
	}
	if b, ok := doc.(bool); ok {
		return &quickSchema{any: true}, b // false accepts nothing: no quick form
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, false
	}
	q := &quickSchema{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
	for k, v := range m {
		switch k {
		case "title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly", "$schema", "$id":
		case "format":
			if !formatNotes {
				return nil, false
			}
		case "allOf", "anyOf":
			l, ok := v.([]any)
			if !ok || len(l) == 0 {
				return nil, false
			}
			for _, e := range l {
				s, ok := quickFrom(e, depth+1, formatNotes)
				switch {
				case ok && k == "allOf":
					q.allOf = append(q.allOf, s)
				case ok:
					q.anyOf = append(q.anyOf, s)
				case k == "allOf":
					return nil, false
				}
			}
			q.hasAnyOf = q.hasAnyOf || k == "anyOf"
		case "type":
			switch t := v.(type) {
			case string:
				if q.types = quickTypes[t]; q.types == 0 {
					return nil, false
				}
			case []any:
				for _, e := range t {
					s, _ := e.(string)
					if quickTypes[s] == 0 {
						return nil, false
					}
					q.types |= quickTypes[s]
				}
				if q.types == 0 {
					return nil, false
				}
			default:
				return nil, false
			}
		case "enum":
			l, ok := v.([]any)
			if !ok {
				return nil, false
			}
			q.hasEnum = true
			for _, e := range l {
				if s, ok := e.(string); ok {
					q.enum = append(q.enum, s)
				} // other values never equal a string: a value that is not one is not accepted
			}
		case "minLength", "maxLength", "minItems", "maxItems":
			n, ok := quickCount(v)
			if !ok {
				return nil, false
			}
			*map[string]*int{"minLength": &q.minLen, "maxLength": &q.maxLen, "minItems": &q.minItems, "maxItems": &q.maxItems}[k] = n
		case "pattern":
			s, ok := v.(string)
			if !ok {
				return nil, false
			}
			re, err := regexp.Compile(s)
			if err != nil {
				return nil, false // the validator matches everything with it; not decided here
			}
			q.pattern = re
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			b, ok := quickBoundOf(v)
			if !ok {
				return nil, false
			}
			b.upper = k == "maximum" || k == "exclusiveMaximum"
			b.exclusive = k == "exclusiveMinimum" || k == "exclusiveMaximum"
			q.bounds = append(q.bounds, b)
		case "required":
			l, ok := v.([]any)
			if !ok || len(l) > 64 {
				return nil, false
			}
			for _, e := range l {
				s, ok := e.(string)
				if !ok {
					return nil, false
				}
				q.required = append(q.required, s)
			}
		case "properties":
			pm, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			q.props = make(map[string]*quickSchema, len(pm))
			for name, sub := range pm {
				s, ok := quickFrom(sub, depth+1, formatNotes)
				if !ok {
					return nil, false
				}
				q.props[name] = s
			}
		case "additionalProperties":
			if b, ok := v.(bool); ok {
				q.noExtra = !b
				continue
			}
			s, ok := quickFrom(v, depth+1, formatNotes)
			if !ok {
				return nil, false
			}
			q.extra = s
		case "items":
			s, ok := quickFrom(v, depth+1, formatNotes) // an array of schemas (draft-07 tuples) has no quick form
			if !ok {
				return nil, false
			}
			q.items = s
		default:
			return nil, false
		}
	}
	q.any = q.types == 0 && !q.hasEnum && q.minLen < 0 && q.maxLen < 0 && q.pattern == nil && len(q.bounds) == 0 &&
		q.props == nil && len(q.required) == 0 && !q.noExtra && q.extra == nil && q.items == nil && q.minItems < 0 && q.maxItems < 0
	return q, true
}

// quickCount reads a non-negative integer keyword value.
func quickCount(v any) (int, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 32)
	return int(i), err == nil && i >= 0
}

func quickBoundOf(v any) (quickBound, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return quickBound{}, false
	}
	var b quickBound
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil && len(n) <= 19 {
		b.isInt, b.i = true, i
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) {
		return quickBound{}, false
	}
	b.f = f
	return b, true
}

// accepts reports whether raw, one JSON value with nothing after it, is
// valid against q for certain. false: not valid, or not known here.
func (q *quickSchema) accepts(raw []byte) bool {
	s := jscan{buf: raw, maxDepth: 64}
	var scratch []byte
	if !q.value(&s, &scratch) {
		return false
	}
	s.ws()
	return s.pos == len(raw)
}

// value checks the value at the cursor against q and its allOf and anyOf
// branches, each read from the value's start, and moves past it.
func (q *quickSchema) value(s *jscan, scratch *[]byte) bool {
	s.ws()
	if len(q.allOf) == 0 && !q.hasAnyOf {
		return q.own(s, scratch)
	}
	start, depth := s.pos, s.depth
	if !q.own(s, scratch) {
		return false
	}
	end := s.pos
	for _, b := range q.allOf {
		s.pos, s.depth = start, depth
		if !b.value(s, scratch) || s.pos != end {
			return false
		}
	}
	if q.hasAnyOf {
		found := false
		for _, b := range q.anyOf {
			s.pos, s.depth = start, depth
			if b.value(s, scratch) && s.pos == end {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	s.pos, s.depth = end, depth
	return true
}

// own checks the value at the cursor against q's keywords but allOf and
// anyOf, and moves past it.
func (q *quickSchema) own(s *jscan, scratch *[]byte) bool {
	if q.any {
		return s.skip() == nil
	}
	switch c := s.peek(); {
	case c == '{':
		return q.allows(typeObject) && !q.hasEnum && q.object(s, scratch)
	case c == '[':
		return q.allows(typeArray) && !q.hasEnum && q.array(s, scratch)
	case c == '"':
		if !q.allows(typeString) {
			return false
		}
		v, err := s.str(scratch)
		return err == nil && q.str(v)
	case c == 't':
		return q.allows(typeBoolean) && !q.hasEnum && s.literal("true") == nil
	case c == 'f':
		return q.allows(typeBoolean) && !q.hasEnum && s.literal("false") == nil
	case c == 'n':
		return q.allows(typeNull) && !q.hasEnum && s.literal("null") == nil
	case c == '-' || c >= '0' && c <= '9':
		n, err := s.number()
		if err != nil || q.hasEnum {
			return false
		}
		lit := s.buf[n.start:n.end]
		integer := !bytes.ContainsAny(lit, ".eE") // other integers (1.0, 1e2) are left to the validator
		if q.types != 0 && q.types&typeNumber == 0 && !(q.types&typeInteger != 0 && integer) {
			return false
		}
		return q.number(lit, integer)
	}
	return false
}

func (q *quickSchema) allows(t uint8) bool { return q.types == 0 || q.types&t != 0 }

func (q *quickSchema) str(v []byte) bool {
	if q.hasEnum {
		found := false
		for _, e := range q.enum {
			if e == string(v) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if q.minLen >= 0 || q.maxLen >= 0 {
		n := utf8.RuneCount(v)
		if q.minLen >= 0 && n < q.minLen || q.maxLen >= 0 && n > q.maxLen {
			return false
		}
	}
	return q.pattern == nil || q.pattern.Match(v)
}

// number checks the bounds. With both the value and the bound integers of
// at most 18 digits the comparison is exact; otherwise only a strict
// inequality of the two as float64 is taken, which rounding cannot create
// (it is monotonic), and equality is left to the validator.
func (q *quickSchema) number(lit []byte, integer bool) bool {
	if len(q.bounds) == 0 {
		return true
	}
	var vi int64
	vInt := false
	if integer && len(lit) <= 19 {
		var err error
		vi, err = strconv.ParseInt(string(lit), 10, 64)
		vInt = err == nil
	}
	vf, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || math.IsInf(vf, 0) {
		return false
	}
	for _, b := range q.bounds {
		var ok bool
		switch {
		case vInt && b.isInt && b.upper:
			ok = vi < b.i || !b.exclusive && vi == b.i
		case vInt && b.isInt:
			ok = vi > b.i || !b.exclusive && vi == b.i
		case b.upper:
			ok = vf < b.f
		default:
			ok = vf > b.f
		}
		if !ok {
			return false
		}
	}
	return true
}

func (q *quickSchema) object(s *jscan, scratch *[]byte) bool {
	if s.enter() != nil {
		return false
	}
	var seen uint64 // bit i: required[i] is present
	for i := 0; ; i++ {
		k, ok, err := s.member(i)
		if err != nil {
			return false
		}
		if !ok {
			break
		}
		for j, r := range q.required {
			if r == string(k) {
				seen |= 1 << j
			}
		}
		// Every copy of a repeated key is checked: the value the validator
		// keeps (the last) is then valid too.
		sub, declared := q.props[string(k)]
		switch {
		case declared:
		case q.noExtra:
			return false
		case q.extra != nil:
			sub = q.extra
		default:
			if s.skip() != nil {
				return false
			}
			continue
		}
		if !sub.value(s, scratch) {
			return false
		}
	}
	return seen == 1<<len(q.required)-1
}

func (q *quickSchema) array(s *jscan, scratch *[]byte) bool {
	if s.enter() != nil {
		return false
	}
	n := 0
	for i := 0; ; i++ {
		ok, err := s.element(i)
		if err != nil {
			return false
		}
		if !ok {
			break
		}
		n++
		if q.items == nil {
			if s.skip() != nil {
				return false
			}
		} else if !q.items.value(s, scratch) {
			return false
		}
	}
	return (q.minItems < 0 || n >= q.minItems) && (q.maxItems < 0 || n <= q.maxItems)
}
