package classify

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestAutomatonMatchesNaive checks the Aho-Corasick scan against a search
// of every pattern at every position of random text, for a small set of
// patterns and for one with a trie of tens of thousands of states, with
// gapped patterns, digits next to numbers, line breaks and multi-byte text.
func TestAutomatonMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	alphabet := []string{"a", "b", "c", "x", " ", "0", "1", ".", "中", "文", "\n"}
	word := func(n int) string {
		s := ""
		for range n {
			s += alphabet[r.IntN(len(alphabet))]
		}
		return s
	}
	for _, tc := range []struct {
		name            string
		pats, maxLen    int
		hays, maxHayLen int
	}{
		{"300 short patterns", 300, 6, 400, 300},
		{"5000 long patterns", 5000, 14, 100, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pats []pattern
			var owners [][]int32
			seen := map[string]bool{}
			for len(pats) < tc.pats {
				p := word(1 + r.IntN(tc.maxLen))
				if r.IntN(5) == 0 {
					p += "*" + word(1+r.IntN(3))
				}
				if seen[p] || newPattern(p).segs == nil {
					continue
				}
				seen[p] = true
				pats = append(pats, newPattern(p))
				owners = append(owners, []int32{int32(len(owners))})
			}
			a := newAutomaton(pats, owners)
			found := 0
			for h := range tc.hays {
				hay := []byte(word(1 + r.IntN(tc.maxHayLen)))
				bits := make([]uint64, (len(pats)+63)/64)
				a.scan(hay, bits)
				for id, p := range pats {
					want := false
					first := p.segs[0]
					for end := len(first); end <= len(hay) && !want; end++ {
						want = string(hay[end-len(first):end]) == first && p.matchAt(hay, end)
					}
					if got := bits[id>>6]&(1<<(id&63)) != 0; got != want {
						t.Fatalf("text %d %q, pattern %s: scan %v, naive %v", h, hay, fmt.Sprint(p.segs), got, want)
					}
					if want {
						found++
					}
				}
			}
			if found < tc.hays {
				t.Fatalf("only %d matches over %d texts: the test would not notice a scan that finds nothing", found, tc.hays)
			}
		})
	}
}
