package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	sum := sha256.Sum256([]byte("a-long-enough-secret"))
	digest := hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name string
		in   string
		want string // substring of the error; "" for valid
	}{
		{"list, yaml", "- {token: a-long-enough-secret, role: api, tenants: [acme]}", ""},
		{"object, json", `{"tokens":[{"name":"ci","token_sha256":"` + digest + `","role":"ingest","tenants":["acme","globex"]}]}`, ""},
		{"all tenants", "- {token: a-long-enough-secret, role: metrics, tenants: ['*']}", ""},
		{"no tokens", "tokens: []", "no tokens"},
		{"short token", "- {token: short, role: api, tenants: [a]}", "shorter than 16 bytes"},
		{"both forms", "- {token: a-long-enough-secret, token_sha256: " + digest + ", role: api, tenants: [a]}", "not both"},
		{"bad digest", "- {token_sha256: abc, role: api, tenants: [a]}", "64 hex digits"},
		{"no secret", "- {role: api, tenants: [a]}", "no token or token_sha256"},
		{"bad role", "- {token: a-long-enough-secret, role: admin, tenants: [a]}", `role "admin"`},
		{"no tenants", "- {token: a-long-enough-secret, role: api}", "no tenants"},
		{"empty tenant", "- {token: a-long-enough-secret, role: api, tenants: ['']}", "1 to 256 bytes"},
		{"unknown field", "- {token: a-long-enough-secret, role: api, tenants: [a], tenant: b}", "unknown field"},
		{"duplicate key", "- {token: a-long-enough-secret, role: api, role: ingest, tenants: [a]}", "already set"},
		{"same secret twice", "- {token: a-long-enough-secret, role: api, tenants: [a]}\n- {token_sha256: " + digest + ", role: ingest, tenants: [a]}", "same secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, err := Parse("test", []byte(tc.in))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Parse: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Parse: %v, want an error containing %q", err, tc.want)
			case tc.want == "" && ts.Len() == 0:
				t.Fatal("no tokens parsed")
			}
			if err != nil && strings.Contains(err.Error(), "a-long-enough-secret") {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
}

func TestAuthenticate(t *testing.T) {
	ts, err := Parse("test", []byte(`
- {name: acme, token: acme-secret-000001, role: api, tenants: [acme]}
- {name: all, token: all-secret-00000001, role: api, tenants: ["*"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		header string
		want   string // token name, or the error
	}{
		{"Bearer acme-secret-000001", "acme"},
		{"bearer   all-secret-00000001 ", "all"},
		{"Bearer acme-secret-000002", ErrBadToken.Error()},
		{"Bearer ", ErrNoToken.Error()},
		{"Basic YWNtZTp4", ErrNoToken.Error()},
		{"", ErrNoToken.Error()},
		{"acme-secret-000001", ErrNoToken.Error()},
	} {
		tok, err := ts.Authenticate(tc.header)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = tok.Name
		}
		if got != tc.want {
			t.Errorf("Authenticate(%q) = %q, want %q", tc.header, got, tc.want)
		}
	}
	acme, _ := ts.Authenticate("Bearer acme-secret-000001")
	all, _ := ts.Authenticate("Bearer all-secret-00000001")
	if !acme.AllowsTenant("acme") || acme.AllowsTenant("globex") || acme.Unrestricted() || !all.AllowsTenant("globex") || !all.Unrestricted() {
		t.Error("tenant checks")
	}
}

func TestCheckOpenListen(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		insecure bool
		ok       bool
	}{
		{"127.0.0.1:8080", false, true},
		{"[::1]:8080", false, true},
		{"localhost:8080", false, true},
		{"127.0.0.2:8080", false, true},
		{"", false, true}, // a disabled listener
		{"0.0.0.0:8080", false, false},
		{":8080", false, false},
		{"10.0.0.5:8080", false, false},
		{"[::]:8080", false, false},
		{"0.0.0.0:8080", true, true},
	} {
		err := CheckOpenListen("-listen", tc.addr, tc.insecure)
		if (err == nil) != tc.ok {
			t.Errorf("CheckOpenListen(%q, insecure=%v) = %v, want ok=%v", tc.addr, tc.insecure, err, tc.ok)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		want    bool
		wantErr bool
	}{
		{"127.0.0.1:6060", true, false},
		{"127.1.2.3:0", true, false},
		{"[::1]:6060", true, false},
		{"localhost:6060", true, false},
		{":6060", false, false},
		{"0.0.0.0:6060", false, false},
		{"[::]:6060", false, false},
		{"192.168.1.5:6060", false, false},
		{"example.com:6060", false, false},
		{"127.0.0.1", false, true},
		{"", false, true},
	} {
		got, err := IsLoopback(tc.addr)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("IsLoopback(%q) = %v, %v; want %v, error %v", tc.addr, got, err, tc.want, tc.wantErr)
		}
	}
}
