// Package auth holds the bearer tokens of mcplens and checks requests
// against them. A token has a role (ingest: may send calls; api: may read
// analytics; metrics: may scrape /metrics) and the tenants it covers ("*"
// for all). Tokens are configured in a YAML or JSON file, or inline in an
// environment variable, as plain text or as a SHA-256 hex digest; only
// digests are kept in memory, compared in constant time, and never logged.
//
// With no token configured the services run in open mode: every request is
// allowed, which is only safe on a loopback address (see CheckOpenListen).
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Role is what a token may do.
type Role string

// The roles of a token.
const (
	RoleIngest  Role = "ingest"  // POST /v1/calls, /v1/traces, OTLP/gRPC
	RoleAPI     Role = "api"     // GET /api/v1/...
	RoleMetrics Role = "metrics" // GET /metrics (may show every tenant's gauges)
)

// AllTenants in a token's tenant list covers every tenant.
const AllTenants = "*"

// Token is one configured credential. Name identifies it in logs; the
// secret itself is kept only as its SHA-256 digest.
type Token struct {
	Name    string
	Role    Role
	Tenants []string
	digest  [sha256.Size]byte
}

// AllowsTenant reports whether the token covers tenant.
func (t *Token) AllowsTenant(tenant string) bool {
	return slices.Contains(t.Tenants, AllTenants) || slices.Contains(t.Tenants, tenant)
}

// Unrestricted reports whether the token covers every tenant.
func (t *Token) Unrestricted() bool { return slices.Contains(t.Tenants, AllTenants) }

// Tokens is the set of configured tokens; a nil *Tokens is open mode.
// It is immutable and safe for concurrent use.
type Tokens struct {
	list []Token
}

// entry is one token as written in the file.
type entry struct {
	Name        string   `json:"name"`
	Token       string   `json:"token"`
	TokenSHA256 string   `json:"token_sha256"`
	Role        Role     `json:"role"`
	Tenants     []string `json:"tenants"`
}

// Parse reads tokens from YAML or JSON: a list of entries, or an object
// whose "tokens" member is that list. Each entry has exactly one of token
// (plain text, at least 16 bytes) and token_sha256 (64 hex digits), a role
// and a non-empty tenants list. name defaults to "token N". src names the
// input in errors. An empty list is an error: open mode is chosen by
// configuring no token source at all.
func Parse(src string, data []byte) (*Tokens, error) {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("tokens %s: %w", src, err)
	}
	var list []entry
	if err := yaml.UnmarshalStrict(j, &list); err != nil {
		var wrapped struct {
			Tokens []entry `json:"tokens"`
		}
		if err2 := yaml.UnmarshalStrict(j, &wrapped); err2 != nil {
			return nil, fmt.Errorf("tokens %s: want a list of {name, token or token_sha256, role, tenants}: %w", src, err)
		}
		list = wrapped.Tokens
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("tokens %s: no tokens; remove the setting to run in open mode", src)
	}
	ts := &Tokens{}
	seen := map[[sha256.Size]byte]string{}
	for i, e := range list {
		t := Token{Name: e.Name, Role: e.Role, Tenants: e.Tenants}
		if t.Name == "" {
			t.Name = fmt.Sprintf("token %d", i+1)
		}
		where := fmt.Sprintf("tokens %s: %s", src, t.Name)
		switch {
		case e.Token != "" && e.TokenSHA256 != "":
			return nil, fmt.Errorf("%s: give token or token_sha256, not both", where)
		case e.Token != "":
			if len(e.Token) < 16 {
				return nil, fmt.Errorf("%s: token shorter than 16 bytes; use a random secret (openssl rand -hex 32)", where)
			}
			t.digest = sha256.Sum256([]byte(e.Token))
		case e.TokenSHA256 != "":
			b, err := hex.DecodeString(strings.TrimSpace(e.TokenSHA256))
			if err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("%s: token_sha256 must be 64 hex digits (sha256sum of the token)", where)
			}
			copy(t.digest[:], b)
		default:
			return nil, fmt.Errorf("%s: no token or token_sha256", where)
		}
		switch t.Role {
		case RoleIngest, RoleAPI, RoleMetrics:
		default:
			return nil, fmt.Errorf("%s: role %q: want ingest, api or metrics", where, t.Role)
		}
		if len(t.Tenants) == 0 {
			return nil, fmt.Errorf("%s: no tenants; list them, or [\"*\"] for all", where)
		}
		for _, tn := range t.Tenants {
			if tn == "" || len(tn) > 256 {
				return nil, fmt.Errorf("%s: tenant names must be 1 to 256 bytes", where)
			}
		}
		if other, dup := seen[t.digest]; dup {
			return nil, fmt.Errorf("%s: same secret as %s", where, other)
		}
		seen[t.digest] = t.Name
		ts.list = append(ts.list, t)
	}
	return ts, nil
}

// Load reads tokens from the file path, or from the inline text of the
// environment variable (YAML or JSON) when path is empty. Both empty gives
// nil: open mode.
func Load(path, inline string) (*Tokens, error) {
	switch {
	case path != "" && inline != "":
		return nil, errors.New("tokens: give -tokens-file or MCPLENS_TOKENS, not both")
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("tokens: %w", err)
		}
		return Parse(path, b)
	case inline != "":
		return Parse("MCPLENS_TOKENS", []byte(inline))
	}
	return nil, nil
}

// Errors of Authenticate; both mean HTTP 401.
var (
	ErrNoToken  = errors.New("missing bearer token: send Authorization: Bearer <token>")
	ErrBadToken = errors.New("unknown bearer token")
)

// Authenticate returns the token presented in an Authorization header
// value ("Bearer <token>"). Every configured digest is compared, in
// constant time, so the time taken does not tell which one matched.
func (ts *Tokens) Authenticate(header string) (*Token, error) {
	scheme, secret, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
		return nil, ErrNoToken
	}
	d := sha256.Sum256([]byte(strings.TrimSpace(secret)))
	found := -1
	for i := range ts.list {
		if subtle.ConstantTimeCompare(d[:], ts.list[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return nil, ErrBadToken
	}
	return &ts.list[found], nil
}

// Len returns the number of tokens; 0 for nil (open mode).
func (ts *Tokens) Len() int {
	if ts == nil {
		return 0
	}
	return len(ts.list)
}

// WithRole returns the tokens of role r.
func (ts *Tokens) WithRole(r Role) []*Token {
	if ts == nil {
		return nil
	}
	var out []*Token
	for i := range ts.list {
		if ts.list[i].Role == r {
			out = append(out, &ts.list[i])
		}
	}
	return out
}

// CheckOpenListen refuses open mode (no tokens) on an address that is not
// loopback, unless insecure is set (-insecure-open). flag names the listen
// flag in the error.
func CheckOpenListen(flag, addr string, insecure bool) error {
	if insecure || addr == "" {
		return nil
	}
	loop, err := IsLoopback(addr)
	if err != nil {
		return fmt.Errorf("%s %q: %w", flag, addr, err)
	}
	if loop {
		return nil
	}
	return fmt.Errorf("%s %s is not a loopback address and no tokens are configured (open mode): "+
		"configure -tokens-file, listen on 127.0.0.1, or pass -insecure-open to serve everyone", flag, addr)
}

// IsLoopback reports whether the listen address host:port names only this
// machine (localhost or a loopback IP); an empty host (every interface) is
// not loopback.
func IsLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}
