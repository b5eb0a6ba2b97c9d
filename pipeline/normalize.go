package pipeline

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
)

// NormalizeArgs canonicalizes the JSON arguments of one tools/call made to
// server, hashes them, redacts them and explodes them into parallel key and
// value lists. DecodeCapture applies the same steps to params.arguments;
// other decoders call NormalizeArgs with the raw arguments they find.
//
//   - argsJSON is the canonical text after redaction: object keys sorted by
//     their UTF-8 bytes, the last of duplicate keys kept, no whitespace,
//     strings re-encoded (only '"', '\\' and control characters escaped, with
//     the short escapes where JSON has them; invalid UTF-8 and unpaired
//     surrogates become U+FFFD) and numbers written in one form that keeps
//     their exact decimal value (1.0 → 1, 1e2 → 100, 1.50 → 1.5, 1e-7;
//     big integers digit for digit; see appendNumber). Empty input and null
//     read as {}.
//   - hash is the xxHash64 of the canonical text before redaction, so calls
//     that differ only in a secret still hash differently, and the hash of
//     {} when there are no arguments.
//   - keys and values have the same length and are sorted by key. An object
//     is flattened into dotted keys ("a.b.c"); an array is kept as its
//     (redacted) canonical JSON under its key; an empty object reads "{}".
//     Strings are given without quotes, other scalars as their canonical
//     JSON text (true, false, null, 100). Each key and value longer than
//     MaxValueBytes is cut at a UTF-8 boundary and ends in "…#" plus the
//     16-hex-digit xxHash64 of the whole text, so distinct long values stay
//     distinct; at most MaxArgs entries are kept, the first ones in key
//     order. Arguments that are not an object explode to nothing.
//
// Redaction replaces the value of a secret key (Redactor.SecretKey; null
// values are kept) with the string "[REDACTED]" at any depth, including
// inside arrays; for a HashOnly server every other non-null scalar becomes
// its "sha256:…" hash. The error, if any, names the first byte (counting from
// 1) of raw that is not valid JSON, or the nesting limit. The results do not
// alias raw. NormalizeArgs is safe for concurrent use.
func NormalizeArgs(raw []byte, server string, opts *DecodeOptions) (argsJSON string, hash uint64, keys, values []string, err error) {
	lim := opts.limits()
	st := getState()
	defer putState(st)
	s := jscan{buf: raw, maxDepth: lim.maxDepth, kbuf: st.s.kbuf}
	st.canon.reset()
	s.ws()
	if s.pos < len(raw) {
		if err := st.canon.value(&s); err != nil {
			return "", 0, nil, nil, err
		}
		s.ws()
		if s.pos < len(raw) {
			return "", 0, nil, nil, s.unexpected("want end of input after the value")
		}
	}
	st.s.kbuf = s.kbuf
	canon := st.canon.out
	if len(canon) == 0 || string(canon) == "null" {
		canon = append(canon[:0], "{}"...)
	}
	hash = xxhash.Sum64(canon)
	if err := st.ex.run(canon, lim.red, lim.red.HashOnly(server), lim.maxValue); err != nil {
		return "", 0, nil, nil, err
	}
	arena := append(st.arena[:0], st.ex.red...)
	base := len(arena)
	arena = append(arena, st.ex.vals...)
	st.arena = arena
	str := string(arena)
	n := min(len(st.ex.ents), lim.maxArgs)
	kv := make([]string, 2*n) // one allocation for both lists
	keys, values = kv[:n:n], kv[n:]
	for i, e := range st.ex.ents[:n] {
		keys[i] = str[base+e.k0 : base+e.k1]
		values[i] = str[base+e.v0 : base+e.v1]
	}
	return str[:base], hash, keys, values, nil
}

// canonMember is one object member being canonicalized: its decoded key in
// canonizer.keys and its canonical text ("key":value) in canonizer.out.
type canonMember struct{ k0, k1, m0, m1 int }

// canonizer writes the canonical form of a JSON value in one pass. Objects
// are written member by member and reordered in place only when their keys
// were not already sorted and unique.
type canonizer struct {
	out  []byte
	tmp  []byte
	keys []byte
	mem  []canonMember
	str  []byte
	num  []byte
}

func (c *canonizer) reset() {
	c.out, c.keys, c.mem = c.out[:0], c.keys[:0], c.mem[:0]
}

// value appends the canonical form of the value at the cursor to c.out.
func (c *canonizer) value(s *jscan) error {
	s.ws()
	switch ch := s.peek(); {
	case ch == '{':
		return c.object(s)
	case ch == '[':
		if err := s.enter(); err != nil {
			return err
		}
		c.out = append(c.out, '[')
		for i := 0; ; i++ {
			ok, err := s.element(i)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if i > 0 {
				c.out = append(c.out, ',')
			}
			if err := c.value(s); err != nil {
				return err
			}
		}
		c.out = append(c.out, ']')
		return nil
	case ch == '"':
		start, esc, high, err := s.scanString()
		if err != nil {
			return err
		}
		raw := s.buf[start:s.pos]
		if !esc && (!high || utf8.Valid(raw[1:len(raw)-1])) {
			c.out = append(c.out, raw...)
			return nil
		}
		c.str = appendUnescaped(c.str[:0], raw[1:len(raw)-1])
		c.out = appendCanonString(c.out, c.str)
		return nil
	case ch == 't':
		c.out = append(c.out, "true"...)
		return s.literal("true")
	case ch == 'f':
		c.out = append(c.out, "false"...)
		return s.literal("false")
	case ch == 'n':
		c.out = append(c.out, "null"...)
		return s.literal("null")
	case ch == '-' || ch >= '0' && ch <= '9':
		n, err := s.number()
		if err != nil {
			return err
		}
		c.out = c.appendNumber(c.out, s.buf, n)
		return nil
	}
	return s.unexpected("want a value")
}

func (c *canonizer) object(s *jscan) error {
	if err := s.enter(); err != nil {
		return err
	}
	c.out = append(c.out, '{')
	body := len(c.out)
	base, kbase := len(c.mem), len(c.keys)
	sorted, dup := true, false
	for i := 0; ; i++ {
		key, ok, err := s.member(i)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if i > 0 {
			c.out = append(c.out, ',')
		}
		k0 := len(c.keys)
		c.keys = append(c.keys, key...)
		k1 := len(c.keys)
		m0 := len(c.out)
		if s.keyPlain {
			c.out = append(c.out, s.buf[s.keyAt:s.keyAt+len(key)+2]...)
		} else {
			c.out = appendCanonString(c.out, key)
		}
		c.out = append(c.out, ':')
		if err := c.value(s); err != nil {
			return err
		}
		c.mem = append(c.mem, canonMember{k0, k1, m0, len(c.out)})
		if i > 0 {
			p := c.mem[len(c.mem)-2]
			switch cmp := bytes.Compare(c.keys[p.k0:p.k1], c.keys[k0:k1]); {
			case cmp > 0:
				sorted = false
			case cmp == 0:
				dup = true
			}
		}
	}
	if ms := c.mem[base:]; !sorted || dup {
		keys := c.keys
		if !sorted {
			slices.SortStableFunc(ms, func(a, b canonMember) int {
				return bytes.Compare(keys[a.k0:a.k1], keys[b.k0:b.k1])
			})
		}
		c.tmp = append(c.tmp[:0], c.out[body:]...)
		c.out = c.out[:body]
		n := 0
		for j, m := range ms {
			// Of equal keys, now adjacent and in input order, keep the last.
			if j+1 < len(ms) && bytes.Equal(keys[m.k0:m.k1], keys[ms[j+1].k0:ms[j+1].k1]) {
				continue
			}
			if n > 0 {
				c.out = append(c.out, ',')
			}
			c.out = append(c.out, c.tmp[m.m0-body:m.m1-body]...)
			n++
		}
	}
	c.out = append(c.out, '}')
	c.mem, c.keys = c.mem[:base], c.keys[:kbase]
	return nil
}

// appendNumber appends the canonical form of a number literal, which keeps
// its exact decimal value (no float64 rounding; 0.1 and
// 0.10000000000000001 stay different). With the significant digits D (no
// leading or trailing zeros) and the value D×10^e:
//
//   - zero, including -0 and 0.0e5, is "0";
//   - 0 <= e <= 21: the integer, D followed by e zeros (1.0 → 1, 1e2 → 100,
//     big integers digit for digit);
//   - e < 0 and the value is at least 1: D with a decimal point (12.50 → 12.5);
//   - e < 0 and the value is at least 1e-6: "0." and leading zeros
//     (1e-6 → 0.000001);
//   - otherwise one digit, the rest after a point, "e" and the exponent
//     without a plus sign or leading zeros (1e22, 1.5e-7).
//
// A literal whose exponent has more than 15 significant digits is kept as
// written.
func (c *canonizer) appendNumber(dst, b []byte, n numLit) []byte {
	if n.fracA == n.fracB && n.expA == n.expB {
		if n.intB-n.intA == 1 && b[n.intA] == '0' {
			return append(dst, '0') // 0 and -0
		}
		return append(dst, b[n.start:n.end]...) // an integer literal is canonical
	}
	d := append(c.num[:0], b[n.intA:n.intB]...)
	d = append(d, b[n.fracA:n.fracB]...)
	c.num = d
	for len(d) > 0 && d[0] == '0' {
		d = d[1:]
	}
	trail := 0
	for len(d) > 0 && d[len(d)-1] == '0' {
		d = d[:len(d)-1]
		trail++
	}
	if len(d) == 0 {
		return append(dst, '0')
	}
	ed := b[n.expA:n.expB]
	for len(ed) > 1 && ed[0] == '0' {
		ed = ed[1:]
	}
	if len(ed) > 15 {
		return append(dst, b[n.start:n.end]...)
	}
	var exp int64
	for _, ch := range ed {
		exp = exp*10 + int64(ch-'0')
	}
	if n.expNeg {
		exp = -exp
	}
	e := exp - int64(n.fracB-n.fracA) + int64(trail)
	nd := int64(len(d))
	point := nd + e // digits before the decimal point
	if n.neg {
		dst = append(dst, '-')
	}
	switch {
	case e >= 0 && e <= 21:
		dst = append(dst, d...)
		for ; e > 0; e-- {
			dst = append(dst, '0')
		}
	case e < 0 && point > 0:
		dst = append(dst, d[:point]...)
		dst = append(dst, '.')
		dst = append(dst, d[point:]...)
	case e < 0 && point > -6:
		dst = append(dst, '0', '.')
		for k := point; k < 0; k++ {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default:
		dst = append(dst, d[0])
		if nd > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		dst = strconv.AppendInt(dst, point-1, 10)
	}
	return dst
}

// appendCanonString appends s, valid UTF-8, as a canonical JSON string.
func appendCanonString(dst, s []byte) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// argEntry is one exploded argument: key and value ranges in exploder.vals.
type argEntry struct{ k0, k1, v0, v1 int }

// exploder walks canonical arguments once, writing the redacted text to red
// and the exploded entries to vals and ents.
type exploder struct {
	s        jscan
	secrets  map[string]bool // SecretKey answers for redactor cacheFor, by key name
	cacheFor *Redactor
	red      []byte
	path     []byte
	vals     []byte
	ents     []argEntry
	str      []byte
	r        *Redactor
	hashOnly bool
	maxValue int
}

var (
	emptyObjectText = []byte("{}")
	nullText        = []byte("null")
	redactedText    = []byte(redactedValue)
)

// run explodes canon, which must be canonical JSON (canonizer output).
func (x *exploder) run(canon []byte, r *Redactor, hashOnly bool, maxValue int) error {
	x.red, x.path, x.vals, x.ents = x.red[:0], x.path[:0], x.vals[:0], x.ents[:0]
	x.r, x.hashOnly, x.maxValue = r, hashOnly, maxValue
	x.s = jscan{buf: canon, maxDepth: math.MaxInt, kbuf: x.s.kbuf}
	emit := len(canon) > 0 && canon[0] == '{'
	if err := x.value(emit); err != nil {
		return err
	}
	for i := 1; i < len(x.ents); i++ {
		if bytes.Compare(x.key(x.ents[i-1]), x.key(x.ents[i])) > 0 {
			slices.SortStableFunc(x.ents, func(a, b argEntry) int { return bytes.Compare(x.key(a), x.key(b)) })
			break
		}
	}
	return nil
}

func (x *exploder) key(e argEntry) []byte { return x.vals[e.k0:e.k1] }

// value copies the value at the cursor to red, redacted, and records entries
// under the current path when emit is set (not inside arrays).
func (x *exploder) value(emit bool) error {
	s := &x.s
	switch c := s.peek(); c {
	case '{':
		if s.pos+1 < len(s.buf) && s.buf[s.pos+1] == '}' {
			s.pos += 2
			x.red = append(x.red, emptyObjectText...)
			if emit && s.depth > 0 {
				x.entry(x.path, emptyObjectText)
			}
			return nil
		}
		if err := s.enter(); err != nil {
			return err
		}
		x.red = append(x.red, '{')
		for i := 0; ; i++ {
			key, ok, err := s.member(i)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if i > 0 {
				x.red = append(x.red, ',')
			}
			x.red = append(x.red, s.buf[s.keyAt:s.pos]...) // a canonical key and its ':'

			plen := len(x.path)
			if s.depth > 1 {
				x.path = append(x.path, '.')
			}
			x.path = append(x.path, key...)
			if s.peek() != 'n' && x.secretKey(key) {
				if err := s.skip(); err != nil {
					return err
				}
				x.red = append(x.red, '"')
				x.red = append(x.red, redactedValue...)
				x.red = append(x.red, '"')
				if emit {
					x.entry(x.path, redactedText)
				}
			} else if err := x.value(emit); err != nil {
				return err
			}
			x.path = x.path[:plen]
		}
		x.red = append(x.red, '}')
		return nil
	case '[':
		start := len(x.red)
		if err := s.enter(); err != nil {
			return err
		}
		x.red = append(x.red, '[')
		for i := 0; ; i++ {
			ok, err := s.element(i)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if i > 0 {
				x.red = append(x.red, ',')
			}
			if err := x.value(false); err != nil {
				return err
			}
		}
		x.red = append(x.red, ']')
		if emit {
			x.entry(x.path, x.red[start:])
		}
		return nil
	case 'n':
		if err := s.literal("null"); err != nil {
			return err
		}
		x.red = append(x.red, nullText...)
		if emit {
			x.entry(x.path, nullText)
		}
		return nil
	}
	// A scalar: string, number, true or false.
	start := s.pos
	var err error
	esc := false
	switch c := s.peek(); {
	case c == '"':
		_, esc, _, err = s.scanString()
	case c == 't':
		err = s.literal("true")
	case c == 'f':
		err = s.literal("false")
	default:
		_, err = s.number()
	}
	if err != nil {
		return err
	}
	raw := s.buf[start:s.pos]
	if x.hashOnly {
		h := len(x.red)
		x.red = appendValueHash(x.red, raw)
		if emit {
			x.entry(x.path, x.red[h+1:len(x.red)-1])
		}
		return nil
	}
	x.red = append(x.red, raw...)
	if emit {
		v := raw
		if raw[0] == '"' {
			v = raw[1 : len(raw)-1]
			if esc {
				x.str = appendUnescaped(x.str[:0], v)
				v = x.str
			}
		}
		x.entry(x.path, v)
	}
	return nil
}

// secretKey asks the Redactor whether key, at the current path, is a
// secret. The answer depends on the key name alone unless an Allow entry
// names a dotted path, so it is cached by name across calls.
func (x *exploder) secretKey(key []byte) bool {
	if x.r.byPath {
		return x.r.secretKey(key, x.path)
	}
	if x.cacheFor != x.r || len(x.secrets) >= maxSecretCache {
		if x.secrets == nil {
			x.secrets = make(map[string]bool)
		}
		clear(x.secrets)
		x.cacheFor = x.r
	}
	if v, ok := x.secrets[string(key)]; ok {
		return v
	}
	v := x.r.secretKey(key, key)
	x.secrets[string(key)] = v
	return v
}

// maxSecretCache bounds the key names an exploder remembers.
const maxSecretCache = 4096

func (x *exploder) entry(key, val []byte) {
	k0 := len(x.vals)
	x.vals = appendCapped(x.vals, key, x.maxValue)
	k1 := len(x.vals)
	x.vals = appendCapped(x.vals, val, x.maxValue)
	x.ents = append(x.ents, argEntry{k0, k1, k1, len(x.vals)})
}

// cappedMarkerLen is the length of the marker that ends a cut value: "…#"
// and 16 hex digits.
const cappedMarkerLen = len("…#") + 16

// appendCapped appends v, or when it is longer than limit its first bytes
// (cut at a UTF-8 boundary), "…#" and the xxHash64 of v in hex, limit bytes
// at most (at least the marker).
func appendCapped(dst, v []byte, limit int) []byte {
	if len(v) <= limit {
		return append(dst, v...)
	}
	dst = append(dst, v[:utf8Cut(v, max(limit-cappedMarkerLen, 0))]...)
	dst = append(dst, "…#"...)
	return appendHex64(dst, xxhash.Sum64(v))
}
