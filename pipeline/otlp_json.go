package pipeline

import (
	"strings"
	"unicode/utf8"
	"unsafe"
)

// The OTLP decoder reads JSON that instrumentations put in attributes
// (Logfire's request, OpenLLMetry's entity input and output, raw results)
// with the capture decoder's scanner, so that a lookup allocates nothing.
// Every function here answers exactly as encoding/json would
// (fastpath_test.go compares them).

// jsonMaxDepth is encoding/json's nesting limit.
const jsonMaxDepth = 10000

// jsonMember is one member of a jsonObj: the decoded key and the value's
// JSON text as written.
type jsonMember struct{ key, raw string }

// jsonObj is a JSON object read for a few lookups by key. It answers as the
// map[string]json.RawMessage that encoding/json fills: the last of
// duplicate keys wins, and a value is its JSON text without the white
// space around it. Keys and values alias the parsed string.
type jsonObj struct {
	n     int
	small [16]jsonMember
	more  []jsonMember // members past len(small)
}

// parse reads s, after strings.TrimSpace, as one JSON object, and reports
// whether it is one. It allocates only for a key with escapes and for
// members past the 16th.
func (o *jsonObj) parse(s string) bool {
	o.n, o.more = 0, o.more[:0]
	if o.read(s) {
		return true
	}
	o.n, o.more = 0, o.more[:0] // a failed parse leaves no members
	return false
}

func (o *jsonObj) read(s string) bool {
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '{' {
		return false
	}
	sc := jscan{buf: stringBytes(s), maxDepth: jsonMaxDepth}
	if sc.enter() != nil {
		return false
	}
	for i := 0; ; i++ {
		key, ok, err := sc.member(i)
		if err != nil {
			return false
		}
		if !ok {
			break
		}
		var k string
		if sc.keyPlain {
			k = s[sc.keyAt+1 : sc.keyAt+1+len(key)]
		} else {
			k = string(key)
		}
		start := sc.pos
		if sc.skip() != nil {
			return false
		}
		m := jsonMember{k, s[start:sc.pos]}
		if o.n < len(o.small) {
			o.small[o.n] = m
		} else {
			o.more = append(o.more, m)
		}
		o.n++
	}
	sc.ws()
	return sc.pos == len(sc.buf)
}

// get returns the JSON text of the value of key, or "" when key is absent.
func (o *jsonObj) get(key string) string {
	for i := len(o.more) - 1; i >= 0; i-- {
		if o.more[i].key == key {
			return o.more[i].raw
		}
	}
	for i := min(o.n, len(o.small)) - 1; i >= 0; i-- {
		if o.small[i].key == key {
			return o.small[i].raw
		}
	}
	return ""
}

// has reports whether key is present. A present value is never "".
func (o *jsonObj) has(key string) bool { return o.get(key) != "" }

// jsonStringValue decodes raw, the JSON text of a value (white space may
// follow it, not precede it), when it is a string, as json.Unmarshal into
// a string does: invalid UTF-8 and unpaired surrogates become U+FFFD. The
// result aliases raw when the string has no escapes.
func jsonStringValue(raw string) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	sc := jscan{buf: stringBytes(raw), maxDepth: 1}
	start, esc, high, err := sc.scanString()
	if err != nil {
		return "", false
	}
	inner := raw[start+1 : sc.pos-1]
	if sc.ws(); sc.pos != len(raw) {
		return "", false
	}
	if !esc && (!high || utf8.ValidString(inner)) {
		return inner, true
	}
	return string(appendUnescaped(nil, stringBytes(inner))), true
}

// validJSON reports whether s is one JSON value, with optional white space
// around it, as json.Valid does.
func validJSON(s string) bool {
	sc := jscan{buf: stringBytes(s), maxDepth: jsonMaxDepth}
	if sc.skip() != nil {
		return false
	}
	sc.ws()
	return sc.pos == len(s)
}

// parsedValid is validJSON(s) for an s that jsonObj.parse accepted,
// without reading s again: parse reads s after strings.TrimSpace, which
// trims Unicode white space, and accepts exactly the JSON objects (as
// json.Unmarshal does), so s is valid JSON when the white space trimmed
// is JSON's (space, tab, CR, LF).
func parsedValid(s string) bool {
	return strings.Trim(s, " \t\r\n") == strings.TrimSpace(s)
}

// stringBytes returns the bytes of s without copying them. The scanner
// only reads its buffer; nothing may write to the result.
func stringBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
