package classify

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Limits on how much text the text stage reads per call. A failure message
// longer than failScan bytes is read as its first and last failScan/2 bytes
// (a Python traceback names the exception on its last line). On a result
// that did not fail, only the first successHead bytes of each text block are
// read: a failure message leads, and a long document that mentions
// "timeout" further down is not a failure.
const (
	failScan    = 4096
	successHead = 512
	maxBlocks   = 16
)

// lowerASCII lowercases ASCII letters only; other bytes, including every
// byte of a multi-byte UTF-8 sequence, are kept, so the result stays valid
// UTF-8 and byte offsets do not move.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// appendLower appends s lowercased (ASCII letters only) to dst.
func appendLower[T string | []byte](dst []byte, s T) []byte {
	n := len(dst)
	dst = append(dst, s...)
	for i := n; i < len(dst); i++ {
		if c := dst[i]; 'A' <= c && c <= 'Z' {
			dst[i] = c + 'a' - 'A'
		}
	}
	return dst
}

// view is the text the text stage reads for one call: the messages,
// lowercased and joined with '\n', with the start of each block kept for
// prefix matches.
type view struct {
	hay    []byte
	starts [maxBlocks]int32
	n      int  // blocks recorded in starts
	msgLen int  // bytes of all messages before any truncation
	full   bool // built for a failed call (full messages) or a head view
	head   int  // bytes kept of each block in a head view
}

func (v *view) reset(buf []byte, full bool, head int) {
	v.hay = buf[:0]
	v.n = 0
	v.msgLen = 0
	v.full = full
	v.head = head
}

func (v *view) begin() {
	if len(v.hay) > 0 {
		v.hay = append(v.hay, '\n')
	}
	if v.n < maxBlocks {
		v.starts[v.n] = int32(len(v.hay))
		v.n++
	}
}

// trimStarts moves each block start past leading white space and markdown
// markers, for prefix matches.
func (v *view) trimStarts() {
	for i := 0; i < v.n; i++ {
		j := int(v.starts[i])
		for j < len(v.hay) {
			switch v.hay[j] {
			case ' ', '\t', '\r', '\n', '*', '#', '>', '`':
				j++
				continue
			}
			break
		}
		v.starts[i] = int32(j)
	}
}

// add appends one message.
func (v *view) add(s string) { addText(v, s) }

func addText[T string | []byte](v *view, s T) {
	if len(s) == 0 || v.n >= maxBlocks {
		return
	}
	v.msgLen += len(s)
	v.begin()
	switch {
	case !v.full && len(s) > v.head:
		v.hay = appendLower(v.hay, s[:v.head])
	case v.full && len(s) > failScan:
		v.hay = appendLower(v.hay, s[:failScan/2])
		v.hay = append(v.hay, '\n')
		v.hay = appendLower(v.hay, s[len(s)-failScan/2:])
	default:
		v.hay = appendLower(v.hay, s)
	}
}

// addJSON appends the contents of a JSON string (without its quotes),
// decoding escapes.
func (v *view) addJSON(raw []byte, escaped bool) {
	if len(raw) == 0 || v.n >= maxBlocks {
		return
	}
	if !escaped {
		addText(v, raw)
		return
	}
	v.begin()
	start := len(v.hay)
	v.hay = appendUnescaped(v.hay, raw)
	v.msgLen += len(raw) // escaped length, as call.view estimates it
	limit := failScan
	if !v.full {
		limit = v.head
	}
	if len(v.hay)-start > limit {
		v.hay = v.hay[:start+limit]
	}
	for i := start; i < len(v.hay); i++ {
		if c := v.hay[i]; 'A' <= c && c <= 'Z' {
			v.hay[i] = c + 'a' - 'A'
		}
	}
}

// matchPrefix reports whether a block starts with one of r's prefixes.
func (v *view) matchPrefix(r *rule) bool {
	for i := 0; i < v.n; i++ {
		b := v.hay[v.starts[i]:]
		if len(b) == 0 || !r.prefixFirst[b[0]] {
			continue
		}
		for _, p := range r.prefixes {
			if len(b) >= len(p) && string(b[:len(p)]) == p {
				return true
			}
		}
	}
	return false
}

// appendUnescaped appends the decoded contents of a JSON string. Invalid
// escapes are copied as they are; it never fails.
func appendUnescaped(dst, raw []byte) []byte {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			dst = append(dst, c)
			continue
		}
		i++
		switch raw[i] {
		case 'n':
			dst = append(dst, '\n')
		case 't':
			dst = append(dst, '\t')
		case 'r':
			dst = append(dst, '\r')
		case 'b', 'f':
			dst = append(dst, ' ')
		case 'u':
			r, n := decodeU(raw[i+1:])
			if n == 0 {
				dst = append(dst, '\\', 'u')
				continue
			}
			i += n
			if r >= 0xD800 && r < 0xDC00 && i+2 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if r2, n2 := decodeU(raw[i+3:]); n2 > 0 && r2 >= 0xDC00 && r2 < 0xE000 {
					r = (r-0xD800)<<10 + (r2 - 0xDC00) + 0x10000
					i += 2 + n2
				}
			}
			dst = utf8.AppendRune(dst, r)
		default: // \" \\ \/ and anything unexpected
			dst = append(dst, raw[i])
		}
	}
	return dst
}

// decodeU decodes the 4 hex digits of a \u escape; n is 0 when invalid.
func decodeU(b []byte) (r rune, n int) {
	if len(b) < 4 {
		return 0, 0
	}
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, 0
		}
	}
	return r, 4
}

// maxGap is how many bytes a `*` in a text pattern stands for at most. A
// gap never spans a line break.
const maxGap = 40

// pattern is a compiled text pattern: segments separated by gaps of at
// most maxGap bytes. Most patterns have one segment.
type pattern struct {
	segs        []string
	digitsStart bool // starts with a digit: must not continue a number
	digitsEnd   bool // ends with a digit: must not be continued by one
}

func newPattern(t string) pattern {
	var p pattern
	parts := strings.Split(t, "*")
	for i, seg := range parts {
		// Spaces next to a `*` belong to the gap; the pattern's own
		// leading and trailing spaces are kept ("found 0 ").
		if i > 0 {
			seg = strings.TrimLeft(seg, " \t")
		}
		if i < len(parts)-1 {
			seg = strings.TrimRight(seg, " \t")
		}
		if seg != "" {
			p.segs = append(p.segs, seg)
		}
	}
	if len(p.segs) > 0 {
		first, last := p.segs[0], p.segs[len(p.segs)-1]
		p.digitsStart = isDigit(first[0])
		p.digitsEnd = isDigit(last[len(last)-1])
	}
	return p
}

// automaton is an Aho-Corasick matcher over the first segments of the text
// patterns of a set of rules. It is a dense DFA over byte classes: bytes
// that occur in no pattern share class 0. One pass over a message marks
// every rule that has a matching pattern.
type automaton struct {
	class  [256]uint8
	nclass uint32
	// delta[off+class] is the next state's offset (state*nclass) shifted
	// left by one, with the low bit set when that state ends a pattern.
	delta    []uint32
	outStart []int32 // outputs of state s are outs[outStart[s]:outStart[s+1]]
	outs     []int32 // pattern ids
	pats     []pattern
	owners   [][]int32 // pattern id -> rule indexes
}

// newAutomaton builds the matcher. owners[p] lists the rule indexes that
// pattern p belongs to.
func newAutomaton(pats []pattern, owners [][]int32) *automaton {
	a := &automaton{pats: pats, owners: owners}
	var used [256]bool
	for _, p := range pats {
		for _, seg := range p.segs {
			for i := 0; i < len(seg); i++ {
				used[seg[i]] = true
			}
		}
	}
	a.nclass = 1
	for b := range 256 {
		if used[b] {
			a.class[b] = uint8(a.nclass)
			a.nclass++
		}
	}
	// Trie of first segments: edges for lookups while building, kids for
	// the breadth-first pass.
	type edge struct {
		class uint8
		to    int32
	}
	edges := map[uint32]int32{}
	outs := [][]int32{nil}
	kids := [][]edge{nil}
	for id, p := range pats {
		s := int32(0)
		first := p.segs[0]
		for i := 0; i < len(first); i++ {
			c := a.class[first[i]]
			key := uint32(s)<<8 | uint32(c)
			nx, ok := edges[key]
			if !ok {
				nx = int32(len(outs))
				outs = append(outs, nil)
				kids = append(kids, nil)
				edges[key] = nx
				kids[s] = append(kids[s], edge{c, nx})
			}
			s = nx
		}
		outs[s] = append(outs[s], int32(id))
	}
	// Breadth-first: failure links, merged outputs and the goto function.
	// A state's row starts as a copy of its failure state's row; its own
	// children then overwrite their columns.
	n, nc := len(outs), int(a.nclass)
	next := make([]int32, n*nc)
	fail := make([]int32, n)
	queue := make([]int32, 0, n)
	for _, e := range kids[0] {
		next[e.class] = e.to
		queue = append(queue, e.to)
	}
	for qi := 0; qi < len(queue); qi++ {
		s := queue[qi]
		f := fail[s]
		if len(outs[f]) > 0 {
			outs[s] = append(outs[s], outs[f]...)
		}
		row, frow := next[int(s)*nc:int(s+1)*nc], next[int(f)*nc:int(f+1)*nc]
		copy(row, frow)
		for _, e := range kids[s] {
			fail[e.to] = frow[e.class]
			row[e.class] = e.to
			queue = append(queue, e.to)
		}
	}
	a.delta = make([]uint32, len(next))
	for i, nx := range next {
		d := uint32(int(nx)*nc) << 1
		if len(outs[nx]) > 0 {
			d |= 1
		}
		a.delta[i] = d
	}
	a.outStart = make([]int32, n+1)
	for s := range outs {
		a.outStart[s] = int32(len(a.outs))
		a.outs = append(a.outs, outs[s]...)
	}
	a.outStart[n] = int32(len(a.outs))
	return a
}

// scan marks in bits the rules owning a pattern found in hay.
func (a *automaton) scan(hay []byte, bits []uint64) {
	if len(a.pats) == 0 {
		return
	}
	delta, class := a.delta, &a.class
	// Every offset the table holds is a state's row (state*nclass) and
	// every class is below nclass, so delta[off+class] is always in range:
	// the loop reads it without a bounds check.
	base := unsafe.Pointer(unsafe.SliceData(delta))
	off := uint32(0)
	for i := 0; i < len(hay); i++ {
		d := *(*uint32)(unsafe.Add(base, uintptr(off+uint32(class[hay[i]]))*4))
		off = d >> 1
		if d&1 == 0 {
			continue
		}
		s := off / a.nclass
		for o, e := a.outStart[s], a.outStart[s+1]; o < e; o++ {
			id := a.outs[o]
			if a.pats[id].matchAt(hay, i+1) {
				for _, r := range a.owners[id] {
					bits[r>>6] |= 1 << (r & 63)
				}
			}
		}
	}
}

// tier is the automaton for messages of at most limit bytes (0: any
// length). The head matcher has two tiers: every pattern, and for messages
// longer than every max_len only the patterns of rules without one, so a
// long document is scanned for a handful of patterns.
type tier struct {
	limit int
	a     *automaton
}

// buildTiers builds the tiers for the rules keep selects; with split false
// it builds a single tier.
func buildTiers(rules []*rule, keep func(*rule) bool, split bool) []tier {
	limit := 0
	for _, r := range rules {
		if r.kind == kindText && keep(r) {
			limit = max(limit, r.maxLen)
		}
	}
	all := buildAutomaton(rules, keep)
	if !split || limit == 0 {
		return []tier{{0, all}}
	}
	long := buildAutomaton(rules, func(r *rule) bool { return keep(r) && r.maxLen == 0 })
	return []tier{{limit, all}, {0, long}}
}

// pick returns the automaton for a message of n bytes.
func pick(tiers []tier, n int) *automaton {
	for _, t := range tiers {
		if t.limit == 0 || n <= t.limit {
			return t.a
		}
	}
	return tiers[len(tiers)-1].a
}

func buildAutomaton(rules []*rule, keep func(*rule) bool) *automaton {
	ids := map[string]int32{}
	var pats []pattern
	var owners [][]int32
	for i, r := range rules {
		if r.kind != kindText || !keep(r) {
			continue
		}
		for _, t := range r.texts {
			id, ok := ids[t]
			if !ok {
				id = int32(len(pats))
				ids[t] = id
				pats = append(pats, newPattern(t))
				owners = append(owners, nil)
			}
			if !slices.Contains(owners[id], int32(i)) {
				owners[id] = append(owners[id], int32(i))
			}
		}
	}
	return newAutomaton(pats, owners)
}

// matchAt completes a match whose first segment ends at end: the other
// segments must follow, each within maxGap bytes on the same line, and a
// pattern that starts or ends with a digit must not be part of a longer
// number ("429" does not match "14290" or "1,429").
func (p *pattern) matchAt(hay []byte, end int) bool {
	start := end - len(p.segs[0])
	for _, seg := range p.segs[1:] {
		limit := min(len(hay), end+maxGap+len(seg))
		window := hay[end:limit]
		if nl := bytes.IndexByte(window, '\n'); nl >= 0 {
			window = window[:nl]
		}
		j := bytes.Index(window, []byte(seg))
		if j < 0 {
			return false
		}
		end += j + len(seg)
	}
	if p.digitsStart && start > 0 {
		c := hay[start-1]
		if isDigit(c) || (c == '.' || c == ',') && start > 1 && isDigit(hay[start-2]) {
			return false
		}
	}
	if p.digitsEnd && end < len(hay) {
		c := hay[end]
		if isDigit(c) || (c == '.' || c == ',') && end+1 < len(hay) && isDigit(hay[end+1]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isBlank reports whether s holds only white space: ASCII spaces, NEL,
// no-break space, the ideographic space, zero-width space and the BOM.
func isBlank[T string | []byte](s T) bool {
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			i++
		case c == 0xC2 && i+1 < len(s) && (s[i+1] == 0x85 || s[i+1] == 0xA0):
			i += 2
		case c == 0xE3 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2] == 0x80,
			c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2] == 0x8B,
			c == 0xEF && i+2 < len(s) && s[i+1] == 0xBB && s[i+2] == 0xBF:
			i += 3
		default:
			return false
		}
	}
	return true
}
