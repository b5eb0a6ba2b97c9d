// Package spelling finds the name or value a slip of the model was meant to
// be: an edit distance that counts a swap of neighbours as one edit, and the
// nearest of a set of candidates within a slip's reach.
package spelling

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Closest returns the candidate nearest to s when it is near enough to be a
// slip of the model: after lowercasing and trimming, an edit distance (a
// swap of neighbours is one edit) of at most 2, or a fifth of the longer
// string, and less than half its length. The nearest wins, ties going to
// the earlier candidate; "" when none is near.
func Closest(s string, candidates []string) string {
	norm := strings.ToLower(strings.TrimSpace(s))
	best, bestD := "", -1
	for _, c := range candidates {
		if c == s {
			continue
		}
		d := Distance(norm, strings.ToLower(strings.TrimSpace(c)))
		n := max(utf8.RuneCountInString(norm), utf8.RuneCountInString(c))
		if d > max(2, n/5) || 2*d >= n && d > 0 {
			continue
		}
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// Distance is the edit distance between a and b in runes, counting a
// swap of two neighbours as one edit (optimal string alignment), the most
// common slip after a missing letter ("opne").
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 256 || len(rb) > 256 {
		return max(len(ra), len(rb)) // long free text is never a slip of one enum value
	}
	rows := [3][]int{make([]int, len(rb)+1), make([]int, len(rb)+1), make([]int, len(rb)+1)}
	pp, prev, cur := rows[0], rows[1], rows[2]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], pp[j-2]+1)
			}
		}
		pp, prev, cur = prev, cur, pp
	}
	return prev[len(rb)]
}

// Match is how a name relates to the known name Nearest found for it.
type Match string

const (
	// Respelled: the same words, cased or separated differently
	// (searchDocs, Search-Docs and search_docs).
	Respelled Match = "respelled"
	// Namespaced: one name is the other with words in front, the prefix a
	// client or a gateway puts on tool names (mcp__github__create_issue,
	// github.create_issue, default_api:create_issue for create_issue) or
	// one the model dropped.
	Namespaced Match = "namespaced"
	// Misspelled: within Closest's reach of a known name, compared word by
	// word as lower-case words joined by "_".
	Misspelled Match = "misspelled"
	// Reworded: the name shares a word that is not a verb (verbs) with one
	// known name: the same thing asked for with another verb or more
	// words (get_customer or find_customer for lookup_customer,
	// weather_forecast for get_forecast).
	Reworded Match = "reworded"
)

// verbs are the words tool names use for what they do, not for what they
// do it to: a name that shares only these with a known one is not a
// rewording of it.
var verbs = map[string]bool{
	"get": true, "list": true, "search": true, "find": true, "fetch": true, "lookup": true, "look": true,
	"up": true, "query": true, "read": true, "retrieve": true, "show": true, "describe": true, "check": true,
	"create": true, "add": true, "new": true, "update": true, "set": true, "edit": true, "delete": true,
	"remove": true, "run": true, "do": true, "make": true, "send": true, "post": true, "put": true,
	"by": true, "for": true, "of": true, "to": true, "the": true, "a": true, "an": true, "all": true,
}

// Nearest returns the known name that name was most likely meant to be, and
// how they relate, trying in turn: the same words (Respelled); one name's
// words ending the other's (Namespaced), the known name sharing the most
// words winning and a tie between known names giving no answer from this
// rule; Closest over the names' words (Misspelled); and a shared word that
// is not a verb (Reworded), the same way. It returns "" when no known name
// qualifies. A known name equal to name is skipped.
func Nearest(name string, known []string) (string, Match) {
	w := Words(name)
	if len(w) == 0 {
		return "", ""
	}
	words := make([][]string, len(known)) // nil for name itself
	for i, k := range known {
		if k != name {
			words[i] = Words(k)
		}
		if len(words[i]) > 0 && slices.Equal(w, words[i]) {
			return k, Respelled
		}
	}
	prefixed := func(kw []string) int {
		short, long := kw, w
		if len(short) > len(long) {
			short, long = long, short
		}
		if len(short) == len(long) || !slices.Equal(long[len(long)-len(short):], short) {
			return 0
		}
		return len(short)
	}
	if k := best(known, words, prefixed); k != "" {
		return k, Namespaced
	}
	forms := make([]string, len(known))
	for i, kw := range words {
		forms[i] = strings.Join(kw, "_")
	}
	if c := Closest(strings.Join(w, "_"), forms); c != "" {
		for i, f := range forms {
			if f == c && known[i] != name {
				return known[i], Misspelled
			}
		}
	}
	nouns := map[string]bool{}
	for _, x := range w {
		if !verbs[x] {
			nouns[x] = true
		}
	}
	shared := func(kw []string) int {
		n, seen := 0, map[string]bool{}
		for _, x := range kw {
			if nouns[x] && !seen[x] {
				n, seen[x] = n+1, true
			}
		}
		return n
	}
	if k := best(known, words, shared); k != "" {
		return k, Reworded
	}
	return "", ""
}

// best returns the known name whose words score highest, when the score is
// above 0 and no other known name has it too; "" otherwise.
func best(known []string, words [][]string, score func([]string) int) string {
	name, top, tie := "", 0, false
	for i, kw := range words {
		switch n := score(kw); {
		case n > top:
			name, top, tie = known[i], n, false
		case n > 0 && n == top && known[i] != name:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return name
}

// Words splits a name into lower-case words: at every rune that is neither
// a letter nor a digit, and where the case changes from lower (or a digit)
// to upper, or from an upper-case run to a capitalised word (HTTPServer is
// http, server).
func Words(name string) []string {
	var out []string
	rs := []rune(name)
	start := -1
	flush := func(end int) {
		if start >= 0 {
			out = append(out, strings.ToLower(string(rs[start:end])))
			start = -1
		}
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start >= 0 && unicode.IsUpper(r) {
			prev := rs[i-1]
			if unicode.IsLower(prev) || unicode.IsDigit(prev) ||
				unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1]) {
				flush(i)
			}
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(rs))
	return out
}
