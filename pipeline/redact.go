package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
)

// RedactConfig configures a Redactor. Every list is optional.
//
// Key matching works on a key's compact form: ASCII letters lowercased and
// every byte that is not a letter, digit or non-ASCII byte removed, so
// "X-Api-Key", "x_api_key" and "xApiKey" all read "xapikey".
type RedactConfig struct {
	// Deny adds key patterns whose values are redacted. A pattern matches a
	// key when the key's compact form contains the pattern's compact form
	// ("ssn" matches "user_ssn" and "SSN").
	Deny []string
	// Allow names keys that are never redacted, even when a default or Deny
	// pattern matches. An entry matches a key whose compact form equals it
	// ("page_token" allows "pageToken"), or, when it contains dots, the
	// compact dotted path of a nested key ("auth.mode" allows
	// {"auth":{"mode":…}}).
	Allow []string
	// HashOnlyServers lists servers (exact names) whose argument values are
	// never stored: every non-null scalar is replaced by
	// "sha256:" + the first 16 hex digits of the SHA-256 of its canonical
	// JSON text. Keys and structure are kept.
	HashOnlyServers []string
}

// Redactor removes secrets from arguments and messages before storage. It is
// immutable after construction and safe for concurrent use.
type Redactor struct {
	// byFirst indexes the substring patterns (compact form) by first byte.
	byFirst  [256][]string
	allow    map[string]struct{} // compact names and compact dotted paths
	byPath   bool                // an Allow entry names a dotted path
	hashOnly map[string]struct{}
}

// redactedValue replaces the value of a secret key, and secrets in messages.
const redactedValue = "[REDACTED]"

// defaultSecretSubstrings match anywhere in a key's compact form.
var defaultSecretSubstrings = []string{
	"password", "passwd", "passphrase", "passcode", "secret", "credential",
	"apikey", "accesskey", "privatekey", "authorization", "cookie",
	"accesstoken", "refreshtoken", "authtoken", "sessiontoken", "idtoken",
	"bearertoken",
}

// isSecretWord reports whether a lowercase key segment is a secret word.
// Segments are split at separators and camelCase boundaries, so "token"
// matches "auth_token" and "sessionToken" but not "max_tokens".
func isSecretWord(seg []byte) bool {
	switch string(seg) {
	case "token", "pwd", "auth", "jwt", "bearer", "otp":
		return true
	}
	return false
}

var defaultRedactor = sync.OnceValue(func() *Redactor {
	r, err := NewRedactor(RedactConfig{})
	if err != nil {
		panic(err) // the built-in patterns are valid
	}
	return r
})

// DefaultRedactor returns the shared Redactor with the default secret
// patterns, no Allow list and no hash-only servers.
func DefaultRedactor() *Redactor { return defaultRedactor() }

// NewRedactor builds a Redactor from the default patterns plus cfg. It
// rejects patterns that have no letters or digits, since they would match
// every key.
func NewRedactor(cfg RedactConfig) (*Redactor, error) {
	r := &Redactor{}
	for _, p := range defaultSecretSubstrings {
		r.byFirst[p[0]] = append(r.byFirst[p[0]], p)
	}
	for _, p := range cfg.Deny {
		c := string(appendCompactKey(nil, p, false))
		if c == "" {
			return nil, fmt.Errorf("redact deny pattern %q: want letters or digits", p)
		}
		r.byFirst[c[0]] = append(r.byFirst[c[0]], c)
	}
	if len(cfg.Allow) > 0 {
		r.allow = make(map[string]struct{}, len(cfg.Allow))
		for _, a := range cfg.Allow {
			c := string(appendCompactKey(nil, a, true))
			if strings.Trim(c, ".") == "" {
				return nil, fmt.Errorf("redact allow entry %q: want letters or digits", a)
			}
			r.allow[c] = struct{}{}
			r.byPath = r.byPath || strings.Contains(c, ".")
		}
	}
	if len(cfg.HashOnlyServers) > 0 {
		r.hashOnly = make(map[string]struct{}, len(cfg.HashOnlyServers))
		for _, s := range cfg.HashOnlyServers {
			r.hashOnly[s] = struct{}{}
		}
	}
	return r, nil
}

// HashOnly reports whether every argument value of server is stored as a
// hash.
func (r *Redactor) HashOnly(server string) bool {
	_, ok := r.hashOnly[server]
	return ok
}

func (r *Redactor) hashOnlyBytes(server []byte) bool {
	_, ok := r.hashOnly[string(server)]
	return ok
}

// SecretKey reports whether the value under key, at the dotted path (which
// ends with key; it equals key at the top level), is redacted.
func (r *Redactor) SecretKey(key, path string) bool {
	return r.secretKey([]byte(key), []byte(path))
}

func (r *Redactor) secretKey(key, path []byte) bool {
	var small [64]byte
	c := appendCompactKey(small[:0], key, false)
	if r.allow != nil {
		if _, ok := r.allow[string(c)]; ok {
			return false
		}
		if len(path) != len(key) {
			var smallPath [128]byte
			if _, ok := r.allow[string(appendCompactKey(smallPath[:0], path, true))]; ok {
				return false
			}
		}
	}
	return r.matchCompact(c) || matchWords(r, key)
}

// matchCompact reports whether a substring pattern occurs in the compact key c.
func (r *Redactor) matchCompact(c []byte) bool {
	for i := range c {
		for _, p := range r.byFirst[c[i]] {
			if len(p) <= len(c)-i && string(c[i:i+len(p)]) == p {
				return true
			}
		}
	}
	return false
}

// matchWords reports whether one of key's segments is a secret word.
func matchWords[S ~string | ~[]byte](r *Redactor, key S) bool {
	var seg [8]byte
	n := 0
	long := false
	flush := func() bool {
		hit := n >= 3 && !long && isSecretWord(seg[:n])
		n, long = 0, false
		return hit
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		isUpper := c >= 'A' && c <= 'Z'
		isLower := c >= 'a' && c <= 'z'
		isDigit := c >= '0' && c <= '9'
		if !isUpper && !isLower && !isDigit {
			if flush() {
				return true
			}
			continue
		}
		if isUpper && i > 0 {
			prev := key[i-1]
			prevLower := prev >= 'a' && prev <= 'z' || prev >= '0' && prev <= '9'
			prevUpper := prev >= 'A' && prev <= 'Z'
			nextLower := i+1 < len(key) && key[i+1] >= 'a' && key[i+1] <= 'z'
			if prevLower || prevUpper && nextLower {
				if flush() {
					return true
				}
			}
		}
		if isUpper {
			c += 'a' - 'A'
		}
		if n == len(seg) {
			long = true
			continue
		}
		seg[n] = c
		n++
	}
	return flush()
}

// appendCompactKey appends the compact form of key: ASCII letters lowercased,
// digits and non-ASCII bytes kept, everything else dropped (dots kept when
// keepDots is set, for dotted paths).
func appendCompactKey[S ~string | ~[]byte](dst []byte, key S, keepDots bool) []byte {
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c >= 0x80:
			dst = append(dst, c)
		case c >= 'A' && c <= 'Z':
			dst = append(dst, c+'a'-'A')
		case c == '.' && keepDots:
			dst = append(dst, c)
		}
	}
	return dst
}

// appendValueHash appends the hash-only replacement of a scalar whose
// canonical JSON text is v, as a JSON string: "sha256:" and the first 16 hex
// digits of its SHA-256.
func appendValueHash(dst, v []byte) []byte {
	sum := sha256.Sum256(v)
	dst = append(dst, `"sha256:`...)
	dst = hex.AppendEncode(dst, sum[:8])
	return append(dst, '"')
}

// ScrubMessage masks secrets in free text: the token after "Bearer" or
// "Basic", the value after a secret-looking key followed by "=" or ":"
// ("token=…", "api_key: …", "\"password\":\"…\""), the password in a URL's
// user info, well-known key formats (sk-…, ghp_…, github_pat_…, glpat-…,
// xox?-…, AKIA…, AIza…, ya29.…), JWTs, and long random-looking strings
// (32 or more characters mixing upper case, lower case and digits). Each
// secret becomes "[REDACTED]". It returns s itself when nothing is masked.
func (r *Redactor) ScrubMessage(s string) string {
	out, changed := r.appendScrubbed(nil, s)
	if !changed {
		return s
	}
	return string(out)
}

// scrubAppend appends the scrubbed s to dst; changed reports whether any
// secret was masked.
func scrubAppend[S ~string | ~[]byte](r *Redactor, dst []byte, s S) (out []byte, changed bool) {
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
		if c >= 0x80 { // a run of non-ASCII text holds no token
			i++
			for i < len(s) && s[i] >= 0x80 {
				i++
			}
			continue
		}
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
		// The run: identifier bytes first, then any other token bytes.
		j := i
		for j < len(s) && identByte[s[j]] {
			j++
		}
		identEnd := j
		for j < len(s) && tokenByte[s[j]] {
			j++
		}
		word := s[i:j]
		ident := identEnd == j // isIdent(word); word is not empty
		// key=value inside one token run: "access_token=abc", "key=AIza…".
		// The '=' must be the first byte after the identifier prefix.
		if eq := identEnd - i; !ident && eq > 0 && s[identEnd] == '=' && eq < len(word)-1 {
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
		if len(word) >= 12 && secretLooking(word) { // the length check is secretLooking's first, inlined
			mask(i, j)
			i = j
			continue
		}
		if ident {
			if equalFoldASCII(word, "bearer") || equalFoldASCII(word, "basic") {
				if a, b := nextRun(s, j); b-a >= 8 {
					mask(a, b)
					i = b
					continue
				}
			} else if sepAfter(s, j) { // most words of prose are not followed by '=' or ':'
				if a, b, sep := valueAfterKey(s, j); b > a && (sep == '=' || tokenish(s[a:b])) && secretKeyText(r, word) {
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

func (r *Redactor) appendScrubbed(dst []byte, s string) ([]byte, bool) {
	return scrubAppend(r, dst, s)
}

func secretKeyText[S ~string | ~[]byte](r *Redactor, key S) bool {
	var small [64]byte
	return r.matchCompact(appendCompactKey(small[:0], key, false)) || matchWords(r, key)
}

// tokenByte marks the bytes that can be part of a token in free text:
// letters, digits and the characters of base64, base64url and JWTs.
var tokenByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '-' || c == '.' || c == '+' || c == '/' || c == '=' || c == '~'
	}
	return t
}()

// identByte marks the bytes of an identifier: letters, digits, '_' and '-'.
var identByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	return t
}()

func isIdent[S ~string | ~[]byte](s S) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !identByte[s[i]] {
			return false
		}
	}
	return true
}

func equalFoldASCII[S ~string | ~[]byte](s S, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// nextRun skips spaces from i and returns the token run that follows.
func nextRun[S ~string | ~[]byte](s S, i int) (a, b int) {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	a = i
	for i < len(s) && tokenByte[s[i]] {
		i++
	}
	return a, i
}

// sepAfter reports whether a key that ends at i is followed by '=' or ':'
// as valueAfterKey reads them: after an optional quote and spaces.
func sepAfter[S ~string | ~[]byte](s S, i int) bool {
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	for i < len(s) && s[i] == ' ' {
		i++
	}
	return i < len(s) && (s[i] == '=' || s[i] == ':')
}

// valueAfterKey parses `"? *[:=] *["']?value` after a key that ends at i and
// returns the value's bounds and the separator. A quoted value runs to its
// closing quote (at most 512 bytes); an unquoted one is a token run.
func valueAfterKey[S ~string | ~[]byte](s S, i int) (a, b int, sep byte) {
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	for i < len(s) && s[i] == ' ' {
		i++
	}
	if i >= len(s) || s[i] != '=' && s[i] != ':' {
		return 0, 0, 0
	}
	sep = s[i]
	i++
	for i < len(s) && s[i] == ' ' {
		i++
	}
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		q := s[i]
		i++
		a = i
		for i < len(s) && s[i] != q && i-a < 512 {
			if s[i] == '\\' {
				i++
			}
			i++
		}
		return a, min(i, len(s)), sep
	}
	a, b = nextRun(s, i)
	return a, b, sep
}

// urlPassword returns the password in the user info of a URL whose
// authority starts at i ("user:pass@host"), or an empty range.
func urlPassword[S ~string | ~[]byte](s S, i int) (a, b int) {
	colon := -1
	for j := i; j < len(s) && j-i < 256; j++ {
		switch c := s[j]; c {
		case ':':
			if colon < 0 {
				colon = j
			}
		case '@':
			if colon >= 0 && j > colon+1 {
				return colon + 1, j
			}
			return 0, 0
		case '/', ' ', '\t', '\n', '"', '\'', '<', '>', '?', '#':
			return 0, 0
		}
	}
	return 0, 0
}

// tokenish reports whether an unquoted value after "key:" looks like a
// credential rather than a word of prose ("token: expired").
func tokenish[S ~string | ~[]byte](v S) bool {
	if len(v) >= 16 {
		return true
	}
	if len(v) < 8 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] >= '0' && v[i] <= '9' {
			return true
		}
	}
	return false
}

// secretPrefixes are well-known credential formats; a token with one of these
// prefixes and at least 8 more characters is masked.
var secretPrefixes = []string{
	"sk-", "sk_live_", "sk_test_", "rk_live_", "rk_test_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
	"github_pat_", "glpat-", "xoxb-", "xoxp-", "xoxa-", "xoxs-", "xapp-", "AKIA", "ASIA", "AIza", "ya29.",
}

// secretPrefixFirst marks the first bytes of secretPrefixes.
var secretPrefixFirst = func() (t [256]bool) {
	for _, p := range secretPrefixes {
		t[p[0]] = true
	}
	return t
}()

// secretLooking reports whether a token run looks like a credential.
func secretLooking[S ~string | ~[]byte](w S) bool {
	if len(w) < 12 {
		return false
	}
	if secretPrefixFirst[w[0]] {
		for _, p := range secretPrefixes {
			if len(w) >= len(p)+8 && string(w[:len(p)]) == p {
				return true
			}
		}
	}
	if len(w) >= 20 && string(w[:3]) == "eyJ" && countByte(w, '.') == 2 {
		return true // JWT: base64url header "{"… and two dots
	}
	if len(w) < 32 {
		return false
	}
	var lower, upper, digit, other int
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case c >= 'a' && c <= 'z':
			lower++
		case c >= 'A' && c <= 'Z':
			upper++
		case c >= '0' && c <= '9':
			digit++
		default:
			other++
		}
	}
	return lower > 0 && upper > 0 && digit > 0 && other*16 <= len(w)
}

func countByte[S ~string | ~[]byte](s S, c byte) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
		}
	}
	return n
}
