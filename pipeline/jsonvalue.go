package pipeline

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// decodeJSONValue returns raw as the Go value the schema validator takes:
// what jsonschema.UnmarshalJSON (encoding/json with UseNumber) returns —
// map[string]any (the last of duplicate keys wins), []any, string,
// json.Number holding the literal, bool or nil — or its error. Values made
// of plain strings (no escape, valid UTF-8) are decoded here in one pass,
// without encoding/json's reflection; anything else (an escape, an
// invalid byte, a syntax error, nesting deeper than 64) is handed to
// jsonschema.UnmarshalJSON, so every answer and every error is its.
// FuzzDecodeJSONValue holds the two equal.
func decodeJSONValue(raw []byte) (any, error) {
	d := valueDecoder{in: raw}
	d.space()
	v, ok := d.value(0)
	if d.space(); ok && d.pos == len(d.in) {
		return v, nil
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

// valueDecoder is decodeJSONValue's fast path: ok false means "not decided
// here", never "invalid".
type valueDecoder struct {
	in  []byte
	pos int
}

const maxFastDepth = 64

func (d *valueDecoder) space() {
	for d.pos < len(d.in) {
		switch d.in[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *valueDecoder) value(depth int) (any, bool) {
	if d.pos >= len(d.in) || depth > maxFastDepth {
		return nil, false
	}
	switch c := d.in[d.pos]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		return d.str()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return nil, false
}

func (d *valueDecoder) literal(word string) bool {
	if !bytes.HasPrefix(d.in[d.pos:], []byte(word)) {
		return false
	}
	d.pos += len(word)
	return true
}

func (d *valueDecoder) object(depth int) (any, bool) {
	d.pos++ // {
	m := map[string]any{}
	d.space()
	if d.pos < len(d.in) && d.in[d.pos] == '}' {
		d.pos++
		return m, true
	}
	for {
		d.space()
		if d.pos >= len(d.in) || d.in[d.pos] != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok {
			return nil, false
		}
		d.space()
		if d.pos >= len(d.in) || d.in[d.pos] != ':' {
			return nil, false
		}
		d.pos++
		d.space()
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[k.(string)] = v
		if done, ok := d.after('}'); !ok || done {
			return m, ok
		}
	}
}

func (d *valueDecoder) array(depth int) (any, bool) {
	d.pos++ // [
	a := []any{}
	d.space()
	if d.pos < len(d.in) && d.in[d.pos] == ']' {
		d.pos++
		return a, true
	}
	for {
		d.space()
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if done, ok := d.after(']'); !ok || done {
			return a, ok
		}
	}
}

// after reads what follows a member or an element: a comma (more to come)
// or the closing byte (done); anything else is not ok.
func (d *valueDecoder) after(closing byte) (done, ok bool) {
	d.space()
	if d.pos >= len(d.in) {
		return false, false
	}
	switch d.in[d.pos] {
	case ',':
		d.pos++
		return false, true
	case closing:
		d.pos++
		return true, true
	}
	return false, false
}

// str reads a string without escapes or control characters whose bytes are
// valid UTF-8.
func (d *valueDecoder) str() (any, bool) {
	start := d.pos + 1
	ascii := true
	for i := start; i < len(d.in); i++ {
		switch c := d.in[i]; {
		case c == '"':
			s := d.in[start:i]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			d.pos = i + 1
			return string(s), true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// number reads -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? as its
// literal.
func (d *valueDecoder) number() (any, bool) {
	start, i := d.pos, d.pos
	digits := func() int {
		n := 0
		for i < len(d.in) && d.in[i] >= '0' && d.in[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if d.in[i] == '-' {
		i++
	}
	if i < len(d.in) && d.in[i] == '0' {
		i++
	} else if digits() == 0 {
		return nil, false
	}
	if i < len(d.in) && d.in[i] == '.' {
		i++
		if digits() == 0 {
			return nil, false
		}
	}
	if i < len(d.in) && (d.in[i] == 'e' || d.in[i] == 'E') {
		i++
		if i < len(d.in) && (d.in[i] == '+' || d.in[i] == '-') {
			i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	d.pos = i
	return json.Number(d.in[start:i]), true
}
