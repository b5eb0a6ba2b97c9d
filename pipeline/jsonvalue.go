package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// decodeJSONValue returns raw as the Go value the schema validator takes:
// what jsonschema.UnmarshalJSON (encoding/json with UseNumber) returns —
// map[string]any (the last of duplicate keys wins), []any, string,
// json.Number holding the literal, bool or nil — or its error. The value is
// read in one pass by the decoders' scanner (jscan), whose strings decode
// as encoding/json's do, without encoding/json's reflection; input the
// scanner refuses (a syntax error, nesting deeper than 64) is handed to
// jsonschema.UnmarshalJSON, so every error is its. FuzzDecodeJSONValue
// holds the two equal.
func decodeJSONValue(raw []byte) (any, error) {
	s := jscan{buf: raw, maxDepth: 64}
	v, err := s.value(nil)
	if s.ws(); err == nil && s.pos == len(raw) {
		return v, nil
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

var errNotAValue = errors.New("not a JSON value")

// value reads the value at the cursor as a Go value; scratch holds the
// escaped strings while they are decoded.
func (s *jscan) value(scratch *[]byte) (any, error) {
	s.ws()
	switch c := s.peek(); {
	case c == '{':
		if err := s.enter(); err != nil {
			return nil, err
		}
		m := map[string]any{}
		for i := 0; ; i++ {
			k, ok, err := s.member(i)
			if err != nil || !ok {
				return m, err
			}
			key := string(k)
			if m[key], err = s.value(scratch); err != nil {
				return nil, err
			}
		}
	case c == '[':
		if err := s.enter(); err != nil {
			return nil, err
		}
		a := []any{}
		for i := 0; ; i++ {
			ok, err := s.element(i)
			if err != nil || !ok {
				return a, err
			}
			v, err := s.value(scratch)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
	case c == '"':
		if scratch == nil {
			scratch = new([]byte)
		}
		b, err := s.str(scratch)
		return string(b), err
	case c == 't':
		return true, s.literal("true")
	case c == 'f':
		return false, s.literal("false")
	case c == 'n':
		return nil, s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		n, err := s.number()
		if err != nil {
			return nil, err
		}
		return json.Number(s.buf[n.start:n.end]), nil
	}
	return nil, errNotAValue
}
