package pipeline

// Differential tests of the fast paths added for issue #8 (per-call CPU of
// decode, normalize and classify): the word-at-a-time string scan, the
// run-copying unescaper, the scrubber's fused token scan and the OTLP
// decoder's JSON lookups are compared with the byte-at-a-time code they
// replaced (kept below as the *Ref functions) and with encoding/json, on
// the traffic generator's lines, on mutations of them, and under fuzzing.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcplens/mcplens/traffic"
)

// generatorLines returns n lines of the traffic generator's default mix.
func generatorLines(tb testing.TB, n int) [][]byte {
	tb.Helper()
	var lines [][]byte
	stop := errors.New("enough")
	err := traffic.Generate(traffic.Config{Seed: 21, Sessions: n/5 + 10}, func(line []byte) error {
		lines = append(lines, bytes.Clone(line))
		if len(lines) == n {
			return stop
		}
		return nil
	})
	if err != nil && !errors.Is(err, stop) {
		tb.Fatal(err)
	}
	return lines
}

// mutationBits are inserted into generator lines to reach escapes,
// invalid UTF-8, secrets and broken JSON.
var mutationBits = []string{
	`\\`, `\"`, `\n`, `\u00e9`, `\ud800`, `\ud83d\ude00`, `\u0041`, `\/`, "é", "\xff", "\xc3", "中文", "\x01",
	" token=abcdEFGH1234567890abcdEFGH12 ", " Bearer abcdefghijklmnop ", "https://user:pa55word@host/x",
	` api_key: "sk-abcdefghijklmnop" `, "password=hunter2", "ghp_abcdefghijklmnopqrstuvwxyz", " eyJhbGciOi.eyJzdWIi.sig123456 ",
	"key:", "a=b", "==", `"`, ",", "{", "}", "[", "]", ":", " ", "1e5", "null",
}

// mutate inserts one to four mutationBits at random places of b.
func mutate(rng *rand.Rand, b []byte) []byte {
	b = bytes.Clone(b)
	for k := rng.IntN(4) + 1; k > 0; k-- {
		m := mutationBits[rng.IntN(len(mutationBits))]
		p := rng.IntN(len(b) + 1)
		b = append(b[:p:p], append([]byte(m), b[p:]...)...)
	}
	return b
}

// corpus is generator lines, their mutations and strings built to stress
// word boundaries: every special byte at every offset of 0 to 17 bytes.
func differentialCorpus(tb testing.TB) [][]byte {
	lines := generatorLines(tb, 1500)
	rng := rand.New(rand.NewPCG(8, 8))
	n := len(lines)
	for range 3000 {
		lines = append(lines, mutate(rng, lines[rng.IntN(n)]))
	}
	for _, c := range []byte{'"', '\\', 0x00, 0x1f, 0x20, 0x7f, 0x80, 0xc3, 0xff, 'a'} {
		for size := range 18 {
			for at := range size {
				b := bytes.Repeat([]byte{'x'}, size)
				b[at] = c
				lines = append(lines, b)
			}
		}
	}
	return lines
}

func TestScanStringMatchesReference(t *testing.T) {
	for _, b := range differentialCorpus(t) {
		// Every '"' of the line starts a string (or not): scan from each.
		for at := 0; at < len(b); at++ {
			if b[at] != '"' && at > 0 {
				continue
			}
			got := jscan{buf: b, pos: at}
			want := jscan{buf: b, pos: at}
			gs, ge, gh, gerr := got.scanString()
			ws, we, wh, werr := want.scanStringRef()
			if gs != ws || ge != we || gh != wh || got.pos != want.pos || fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("scanString of %q at %d: got (%d %v %v %v pos %d), want (%d %v %v %v pos %d)",
					b, at, gs, ge, gh, gerr, got.pos, ws, we, wh, werr, want.pos)
			}
		}
	}
}

func TestAppendUnescapedMatchesReference(t *testing.T) {
	for _, b := range differentialCorpus(t) {
		checkUnescape(t, b)
	}
}

// checkUnescape compares the decoders on every valid JSON string in b.
func checkUnescape(t *testing.T, b []byte) {
	t.Helper()
	for at := 0; at < len(b); at++ {
		if b[at] != '"' {
			continue
		}
		s := jscan{buf: b, pos: at}
		start, _, _, err := s.scanString()
		if err != nil {
			continue
		}
		inner := b[start+1 : s.pos-1]
		got, want := appendUnescaped([]byte("pre"), inner), appendUnescapedRef([]byte("pre"), inner)
		if !bytes.Equal(got, want) {
			t.Fatalf("appendUnescaped(%q) = %q, want %q", inner, got, want)
		}
		for _, limit := range []int{0, 1, 7, 64, 4096} {
			c := jscan{buf: b, pos: at}
			cut, n, err := c.appendStringCut([]byte("pre"), limit)
			whole := want[3:]
			if err != nil || n != len(whole) || !bytes.Equal(cut[3:], whole[:utf8Cut(whole, limit)]) || c.pos != s.pos {
				t.Fatalf("appendStringCut(%q, %d) = %q, %d, %v; want %q, %d", inner, limit, cut[3:], n, err, whole[:utf8Cut(whole, limit)], len(whole))
			}
		}
	}
}

func FuzzStringScan(f *testing.F) {
	for _, s := range []string{`"plain ascii text, long enough for words"`, `"\ud800\udc00\ud800x\u00e9\n\"\\"`, "\"\xff\xfe é 中\"", `"unterminated`, "\"ctl\x01\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, want := jscan{buf: b}, jscan{buf: b}
		gs, ge, gh, gerr := got.scanString()
		ws, we, wh, werr := want.scanStringRef()
		if gs != ws || ge != we || gh != wh || got.pos != want.pos || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("scanString(%q): got (%d %v %v %v pos %d), want (%d %v %v %v pos %d)", b, gs, ge, gh, gerr, got.pos, ws, we, wh, werr, want.pos)
		}
		checkUnescape(t, b)
	})
}

func TestScrubMatchesReference(t *testing.T) {
	red, err := NewRedactor(RedactConfig{Deny: []string{"query"}, Allow: []string{"page_token"}})
	if err != nil {
		t.Fatal(err)
	}
	corpus := differentialCorpus(t)
	// The messages DecodeCapture scrubs: texts and error messages.
	for _, line := range corpus[:1500] {
		if _, in, err := DecodeCapture(line, nil); err == nil {
			for _, s := range append(in.Texts, in.RPCMessage, in.LocalError) {
				corpus = append(corpus, []byte(s))
			}
		}
	}
	for _, b := range corpus {
		for _, r := range []*Redactor{DefaultRedactor(), red} {
			got, gc := scrubAppend(r, []byte("pre"), b)
			want, wc := scrubAppendRef(r, []byte("pre"), b)
			if gc != wc || !bytes.Equal(got, want) {
				t.Fatalf("scrub %q:\n got %v %q\nwant %v %q", b, gc, got, wc, want)
			}
		}
	}
}

func FuzzScrubMessage(f *testing.F) {
	for _, s := range mutationBits {
		f.Add("prefix " + s + " suffix")
	}
	f.Add(`{"name":"Fjord Analytics AB","api_key":"AIzaabcdefghijklmnop","note":"token: 1234abcd"}`)
	f.Fuzz(func(t *testing.T, s string) {
		got, gc := scrubAppend(DefaultRedactor(), nil, s)
		want, wc := scrubAppendRef(DefaultRedactor(), nil, s)
		if gc != wc || !bytes.Equal(got, want) {
			t.Fatalf("scrub %q:\n got %v %q\nwant %v %q", s, gc, got, wc, want)
		}
	})
}

// jsonProbeKeys are the keys the OTLP decoder looks up, and a few more.
var jsonProbeKeys = []string{"arguments", "params", "id", "name", "tool_name", "is_error", "result", "error", "jsonrpc",
	"content", "structuredContent", "isError", "resultType", "task", "code", "message", "", "a", "é"}

// checkJSONObj compares jsonObj, jsonStringValue and validJSON with
// encoding/json on s.
func checkJSONObj(t *testing.T, s string) {
	t.Helper()
	var o jsonObj
	ok := o.parse(s)
	m := jsonObject(s)
	if ok != (m != nil) {
		t.Fatalf("jsonObj.parse(%q) = %v, encoding/json: %v", s, ok, m != nil)
	}
	for k, v := range m {
		if got := o.get(k); got != string(v) {
			t.Fatalf("%q: get(%q) = %q, encoding/json %q", s, k, got, v)
		}
	}
	for _, k := range jsonProbeKeys {
		if got, want := o.get(k), string(m[k]); got != want {
			t.Fatalf("%q: get(%q) = %q, encoding/json %q", s, k, got, want)
		}
	}
	if got, want := validJSON(s), json.Valid([]byte(s)); got != want {
		t.Fatalf("validJSON(%q) = %v, json.Valid %v", s, got, want)
	}
	for _, v := range append([]json.RawMessage{json.RawMessage(s)}, mapValues(m)...) {
		got, gok := jsonStringValue(string(v))
		var want string
		wok := len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &want) == nil
		if gok != wok || got != want {
			t.Fatalf("jsonStringValue(%q) = %q, %v; encoding/json %q, %v", v, got, gok, want, wok)
		}
	}
}

func mapValues(m map[string]json.RawMessage) []json.RawMessage {
	var vs []json.RawMessage
	for _, v := range m {
		vs = append(vs, v)
	}
	return vs
}

func TestJSONObjMatchesEncodingJSON(t *testing.T) {
	var objects []string
	for _, b := range differentialCorpus(t) {
		objects = append(objects, string(b))
		// Every object that starts inside the line, to its end or to its
		// matching brace.
		for at := bytes.IndexByte(b, '{'); at >= 0 && at < len(b); {
			objects = append(objects, string(b[at:]))
			s := jscan{buf: b, pos: at, maxDepth: jsonMaxDepth}
			if s.skip() == nil {
				objects = append(objects, string(b[at:s.pos]), " \t"+string(b[at:s.pos])+"\u00a0\n")
			}
			next := bytes.IndexByte(b[at+1:], '{')
			if next < 0 {
				break
			}
			at += next + 1
		}
	}
	objects = append(objects,
		`{"a":1,"a":2}`, `{"con\u0074ent":[],"id":null}`, `{"k\ud800":1}`, `{ "a" : "x" , "b" : [ 1 , 2 ] }`,
		`{"a":1}x`, `{"a":1}{}`, `{}`, `{"a":01}`, `{"a":-}`, `{"is_error":null,"result":"\u00e9"}`,
		strings.Repeat(`{"a":`, 10001)+"1"+strings.Repeat("}", 10001),
		strings.Repeat(`{"a":`, 10000)+"1"+strings.Repeat("}", 10000),
		`{`+strings.Repeat(`"k":1,`, 40)+`"last":2}`,
	)
	for _, s := range objects {
		checkJSONObj(t, s)
	}
}

func FuzzJSONObj(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}],"isError":false}}`,
		`{"code":-32602,"message":"bad \"x\"","data":null}`, `{"a":1,"a":2,"b":"\ud800"}`, " {\"x\":[1,2,{}]}\u00a0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkJSONObj(t, s)
	})
}

func TestParseCode(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"-32602", -32602, true},
		{" 408 ", 408, true},
		{"+7", 7, true},
		{"0", 0, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"9223372036854775808", 9223372036854775807, false}, // ParseInt's answer on overflow
		{"--1", 0, false},
		{"+-1", 0, false},
		{"-", 0, false},
		{"1_000", 0, false},
		{"TimeoutError", 0, false},
		{"", 0, false},
		{"12a", 0, false},
	} {
		got, ok := parseCode(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseCode(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestDecodeEmptyTextBlock pins a corner of the Input strings: a lone empty
// text block leaves Input.Texts nil, as before the strings and raw JSON
// shared one buffer.
func TestDecodeEmptyTextBlock(t *testing.T) {
	for _, tt := range []struct {
		line string
		want []string
	}{
		{`{"time":"2026-11-29T10:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1}}},"response":{"result":{"content":[{"type":"text","text":""}]}}}`, nil},
		{`{"time":"2026-11-29T10:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":"t"}},"response":{"result":{"content":[{"type":"text","text":""},{"type":"text","text":"x"}]}}}`, []string{"", "x"}},
		{`{"time":"2026-11-29T10:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":"t"}},"response":{"result":{"content":[{"text":"a","type":"text","text":"b"},{"type":"image","text":"c"}]}}}`, []string{"b"}},
	} {
		_, in, err := DecodeCapture([]byte(tt.line), nil)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprintf("%#v", in.Texts) != fmt.Sprintf("%#v", tt.want) {
			t.Errorf("%s: Texts = %#v, want %#v", tt.line, in.Texts, tt.want)
		}
	}
}

// The byte-at-a-time code that the fast paths replaced.

func (s *jscan) scanStringRef() (start int, escaped, nonASCII bool, err error) {
	b := s.buf
	start = s.pos
	i := s.pos + 1
	var acc byte
	for {
		for i < len(b) {
			c := b[i]
			if !plainStringByte[c] {
				break
			}
			acc |= c
			i++
		}
		if i >= len(b) {
			s.pos = i
			return start, false, false, s.errAt(start, "unterminated string")
		}
		c := b[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return start, escaped, acc >= 0x80, nil
		case c == '\\':
			if i+1 >= len(b) {
				s.pos = i + 1
				return start, false, false, s.errAt(start, "unterminated string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
					s.pos = i
					return start, false, false, s.errAt(i, "invalid \\u escape")
				}
				i += 6
			default:
				s.pos = i
				return start, false, false, s.errAt(i, fmt.Sprintf("invalid escape %q", b[i:i+2]))
			}
			escaped = true
		default:
			s.pos = i
			return start, false, false, s.errAt(i, "control character in string")
		}
	}
}

func appendUnescapedRef(dst, in []byte) []byte {
	for i := 0; i < len(in); {
		c := in[i]
		switch {
		case c == '\\':
			switch in[i+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := rune(hex4(in[i+2:]))
				i += 6
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+6 <= len(in) && in[i] == '\\' && in[i+1] == 'u' {
						r2 = rune(hex4(in[i+2:]))
					}
					if p := utf16.DecodeRune(r, r2); p != utf8.RuneError {
						r = p
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default:
				dst = append(dst, in[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, in[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

func scrubAppendRef[S ~string | ~[]byte](r *Redactor, dst []byte, s S) (out []byte, changed bool) {
	last := 0 // s[:last] has been copied to dst
	mask := func(a, b int) {
		if !changed {
			changed = true
		}
		dst = append(dst, s[last:a]...)
		dst = append(dst, redactedValue...)
		last = b
	}
	i := 0
	for i < len(s) {
		c := s[i]
		if !tokenByte[c] {
			if c == ':' && i+2 < len(s) && s[i+1] == '/' && s[i+2] == '/' {
				if a, b := urlPassword(s, i+3); b > a {
					mask(a, b)
					i = b
					continue
				}
				i += 3
				continue
			}
			i++
			continue
		}
		if i > 0 && tokenByte[s[i-1]] {
			i++ // inside a run that started before a "://"
			continue
		}
		j := i + 1
		for j < len(s) && tokenByte[s[j]] {
			j++
		}
		word := s[i:j]
		// key=value inside one token run: "access_token=abc", "key=AIza…".
		if eq := indexByteRef(word, '='); eq > 0 && eq < len(word)-1 && isIdentRef(word[:eq]) {
			v := word[eq+1:]
			if secretKeyText(r, word[:eq]) {
				if equalFoldASCII(v, "bearer") || equalFoldASCII(v, "basic") {
					if a, b := nextRun(s, j); b-a >= 8 {
						mask(a, b)
						i = b
						continue
					}
					i = j
					continue
				}
				mask(i+eq+1, j)
				i = j
				continue
			}
			if secretLooking(v) {
				mask(i+eq+1, j)
				i = j
				continue
			}
		}
		if secretLooking(word) {
			mask(i, j)
			i = j
			continue
		}
		if isIdentRef(word) {
			if equalFoldASCII(word, "bearer") || equalFoldASCII(word, "basic") {
				if a, b := nextRun(s, j); b-a >= 8 {
					mask(a, b)
					i = b
					continue
				}
			} else if a, b, sep := valueAfterKey(s, j); b > a && (sep == '=' || tokenish(s[a:b])) && secretKeyText(r, word) {
				{
					v := s[a:b]
					if equalFoldASCII(v, "bearer") || equalFoldASCII(v, "basic") {
						a, b = nextRun(s, b)
						if b-a < 8 {
							i = j
							continue
						}
					}
					mask(a, b)
					i = b
					continue
				}
			}
		}
		i = j
	}
	if changed {
		dst = append(dst, s[last:]...)
	}
	return dst, changed
}

func isIdentRef[S ~string | ~[]byte](s S) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func indexByteRef[S ~string | ~[]byte](s S, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}
