package classify

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"unicode"
)

// foldRegexp is a case-insensitive rule regex with a literal that every
// match contains, so that most texts are ruled out by a substring search
// before the backtracker runs.
type foldRegexp struct {
	*regexp.Regexp
	// need is ASCII, lowercased; every text the regex matches contains it
	// up to ASCII case. "" when no such literal is known.
	need string
}

func newFoldRegexp(re *regexp.Regexp) foldRegexp {
	return foldRegexp{Regexp: re, need: requiredLiteral(re.String())}
}

// matchLower reports whether the regex matches hay, which is lowercased in
// ASCII (a text view).
func (r foldRegexp) matchLower(hay []byte) bool {
	if r.need != "" && !bytes.Contains(hay, []byte(r.need)) {
		return false
	}
	return r.Match(hay)
}

// matchString reports whether the regex matches s, in any case.
func (r foldRegexp) matchString(s string) bool {
	if r.need != "" && !containsFoldASCII(s, r.need) {
		return false
	}
	return r.MatchString(s)
}

// requiredLiteral returns the longest literal that every match of expr
// must contain, lowercased, keeping only ASCII runes whose case folding
// stays in ASCII (not 'k' or 's', which fold to U+212A KELVIN SIGN and
// U+017F LONG S). It follows only what every match passes through: the
// parts of a concatenation, a group, and x+ or x{n,} with n >= 1. It
// returns "" when it finds nothing of at least two bytes.
func requiredLiteral(expr string) string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return ""
	}
	best := ""
	consider := func(b []byte) {
		if len(b) > len(best) {
			best = string(b)
		}
	}
	var walk func(re *syntax.Regexp)
	walk = func(re *syntax.Regexp) {
		switch re.Op {
		case syntax.OpConcat:
			for _, sub := range re.Sub {
				walk(sub)
			}
		case syntax.OpCapture, syntax.OpPlus:
			walk(re.Sub[0])
		case syntax.OpRepeat:
			if re.Min >= 1 {
				walk(re.Sub[0])
			}
		case syntax.OpLiteral:
			var run []byte
			for _, r := range re.Rune {
				if !asciiFold(r) {
					consider(run)
					run = run[:0]
					continue
				}
				if 'A' <= r && r <= 'Z' {
					r += 'a' - 'A'
				}
				run = append(run, byte(r))
			}
			consider(run)
		}
	}
	walk(re)
	if len(best) < 2 {
		return ""
	}
	return best
}

// asciiFold reports whether r and every rune it folds to are ASCII.
func asciiFold(r rune) bool {
	if r >= 0x80 {
		return false
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f >= 0x80 {
			return false
		}
	}
	return true
}

// containsFoldASCII reports whether s contains need (lowercase ASCII),
// ignoring ASCII case.
func containsFoldASCII(s, need string) bool {
	first := need[0]
	firstUpper := first
	if 'a' <= first && first <= 'z' {
		firstUpper -= 'a' - 'A'
	}
	for i := 0; i+len(need) <= len(s); i++ {
		if c := s[i]; c != first && c != firstUpper {
			continue
		}
		j := 1
		for ; j < len(need); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != need[j] {
				break
			}
		}
		if j == len(need) {
			return true
		}
	}
	return false
}
