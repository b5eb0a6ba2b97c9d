package classify

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

func TestRequiredLiteral(t *testing.T) {
	for _, tt := range []struct {
		expr, want string
	}{
		{`(?i)\btools?\b`, "tool"},
		{`(?i)^\s*tool not found`, "tool not found"},
		{`(?i)\bunknown tool\b`, "nown tool"}, // 'k' folds to the Kelvin sign
		{`(?i)timed?\s*out`, "time"},
		{`(?i)connection\s*(?:closed|lost|reset)`, "connection"},
		{`(?i)(?:not found|disabled)`, ""}, // an alternation requires neither
		{`(?i)(foo)+bar`, "foo"},
		{`(?i)(foo)*bar`, "bar"},
		{`(?i)x{2,}yz`, "yz"},
		{`(?i)a`, ""},      // too short to be worth a search
		{`(?i)[a-z]+`, ""}, // no literal
		{`(?i)ss`, ""},     // 's' folds to U+017F
		{`(?i)错误码`, ""},    // not ASCII
		{`(?i)Deadline`, "deadline"},
	} {
		re := regexp.MustCompile(tt.expr)
		if got := requiredLiteral(re.String()); got != tt.want {
			t.Errorf("requiredLiteral(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}

// TestFoldRegexpPrefilter checks on many texts that the literal prefilter
// never changes a regex's answer, for every rule regex of the built-in
// rules and a few more, on lowercased views and on messages as sent.
func TestFoldRegexpPrefilter(t *testing.T) {
	var res []foldRegexp
	for _, r := range Default().rules {
		res = append(res, r.regexes...)
		res = append(res, r.message...)
	}
	for _, e := range []string{`\bunknown tool\b`, `timed?\s*out`, `(?:^|\s)rate\s+limit`, `ERR(or)+ \d+`} {
		re, err := compileFold(e)
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, newFoldRegexp(re))
	}
	words := []string{"tool", "TOOL", "Tool", "unknown", "UNKNOWN", "un\u212Anown", "no such", "not found", "timed", "out",
		"TIMEOUT", "Timed Out", "deadline", "connection", "closed", "reset", "output validation", "validating tool output",
		"does not exist", "disabled", "rate", "limit", "error", "ERRor 42", "\xff", "é", "中文", "\n", " ", "  ", "x", "is",
		"tools", "connection_closed", "\u017F", "MCP error -32602:"}
	rng := rand.New(rand.NewPCG(1, 9))
	for range 20000 {
		var b strings.Builder
		for k := rng.IntN(8); k >= 0; k-- {
			b.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(3) > 0 {
				b.WriteByte(' ')
			}
		}
		s := b.String()
		lower := []byte(lowerASCII(s))
		for _, re := range res {
			if got, want := re.matchString(s), re.MatchString(s); got != want {
				t.Fatalf("%s on %q: matchString %v, MatchString %v", re, s, got, want)
			}
			if got, want := re.matchLower(lower), re.Match(lower); got != want {
				t.Fatalf("%s on %q: matchLower %v, Match %v", re, lower, got, want)
			}
		}
	}
}

func FuzzFoldRegexp(f *testing.F) {
	for _, s := range []string{"Unknown tool: x", "tool foo is not found", "request TIMED OUT", "un\u212Anown tool", "connection reset by peer"} {
		f.Add(s)
	}
	var res []foldRegexp
	for _, r := range Default().rules {
		res = append(res, r.regexes...)
		res = append(res, r.message...)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lower := []byte(lowerASCII(s))
		for _, re := range res {
			if re.matchString(s) != re.MatchString(s) || re.matchLower(lower) != re.Match(lower) {
				t.Fatalf("%s on %q: the prefilter changes the answer", re, s)
			}
		}
	})
}
