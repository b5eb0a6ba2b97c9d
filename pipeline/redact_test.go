package pipeline

import (
	"strings"
	"testing"
)

func TestRedactorSecretKey(t *testing.T) {
	custom, err := NewRedactor(RedactConfig{
		Deny:  []string{"ssn", "Card-Number"},
		Allow: []string{"page_token", "auth.mode"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		r    *Redactor
		key  string
		path string
		want bool
	}{
		{"password", DefaultRedactor(), "password", "password", true},
		{"case-insensitive", DefaultRedactor(), "PASSWORD", "PASSWORD", true},
		{"password inside a word", DefaultRedactor(), "dbPassword", "dbPassword", true},
		{"passwd", DefaultRedactor(), "db_passwd", "db_passwd", true},
		{"pwd segment", DefaultRedactor(), "admin_pwd", "admin_pwd", true},
		{"token segment", DefaultRedactor(), "auth_token", "auth_token", true},
		{"token camelCase", DefaultRedactor(), "sessionToken", "sessionToken", true},
		{"token inside a lowercase run", DefaultRedactor(), "accesstoken", "accesstoken", true},
		{"max_tokens is not a secret", DefaultRedactor(), "max_tokens", "max_tokens", false},
		{"tokenizer is not a secret", DefaultRedactor(), "tokenizer", "tokenizer", false},
		{"secret", DefaultRedactor(), "client_secret", "client_secret", true},
		{"authorization", DefaultRedactor(), "Authorization", "headers.Authorization", true},
		{"proxy authorization", DefaultRedactor(), "Proxy-Authorization", "Proxy-Authorization", true},
		{"auth segment", DefaultRedactor(), "auth", "auth", true},
		{"author is not auth", DefaultRedactor(), "author", "author", false},
		{"X-Api-Key", DefaultRedactor(), "X-Api-Key", "X-Api-Key", true},
		{"apiKey", DefaultRedactor(), "apiKey", "apiKey", true},
		{"APIKey", DefaultRedactor(), "APIKey", "APIKey", true},
		{"api_key", DefaultRedactor(), "api_key", "api_key", true},
		{"apikey", DefaultRedactor(), "apikey", "apikey", true},
		{"access_key", DefaultRedactor(), "aws_access_key_id", "aws_access_key_id", true},
		{"private key", DefaultRedactor(), "private_key", "private_key", true},
		{"cookie", DefaultRedactor(), "Set-Cookie", "Set-Cookie", true},
		{"credentials", DefaultRedactor(), "credentials", "credentials", true},
		{"jwt", DefaultRedactor(), "id_jwt", "id_jwt", true},
		{"an ordinary key", DefaultRedactor(), "department", "department", false},
		{"a query", DefaultRedactor(), "q", "q", false},
		{"cache key is not a secret", DefaultRedactor(), "cache_key", "cache_key", false},
		{"empty key", DefaultRedactor(), "", "", false},
		{"deny pattern inside a key", custom, "user_SSN", "user_SSN", true},
		{"deny pattern with separators", custom, "cardNumber", "cardNumber", true},
		{"defaults still apply", custom, "password", "password", true},
		{"allow by name", custom, "pageToken", "pageToken", false},
		{"allow by name at any depth", custom, "page_token", "list.page_token", false},
		{"allow by dotted path", custom, "mode", "auth.mode", false},
		{"allow is exact", custom, "next_page_token", "next_page_token", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.SecretKey(tt.key, tt.path); got != tt.want {
				t.Errorf("SecretKey(%q, %q) = %v, want %v", tt.key, tt.path, got, tt.want)
			}
		})
	}
}

func TestNewRedactorRejects(t *testing.T) {
	tests := []struct {
		cfg     RedactConfig
		wantErr string
	}{
		{RedactConfig{Deny: []string{"--"}}, `redact deny pattern "--": want letters or digits`},
		{RedactConfig{Allow: []string{"..."}}, `redact allow entry "...": want letters or digits`},
	}
	for _, tt := range tests {
		if _, err := NewRedactor(tt.cfg); err == nil || err.Error() != tt.wantErr {
			t.Errorf("NewRedactor(%+v) error = %v, want %s", tt.cfg, err, tt.wantErr)
		}
	}
}

func TestRedactorHashOnly(t *testing.T) {
	r, err := NewRedactor(RedactConfig{HashOnlyServers: []string{"hr-db"}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.HashOnly("hr-db") || r.HashOnly("HR-DB") || r.HashOnly("kb") || DefaultRedactor().HashOnly("hr-db") {
		t.Errorf("HashOnly matches the wrong servers")
	}
}

func TestScrubMessage(t *testing.T) {
	r := DefaultRedactor()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"plain text is unchanged", "数据库连接池耗尽 (pool exhausted: 50/50 connections)", "数据库连接池耗尽 (pool exhausted: 50/50 connections)"},
		{"bearer token", "sent Authorization: Bearer abc.def-ghi_jkl", "sent Authorization: Bearer [REDACTED]"},
		{"bearer is case-insensitive", "bearer 0123456789abcdef", "bearer [REDACTED]"},
		{"basic credentials", "Authorization: Basic b3BzOmh1bnRlcjI=", "Authorization: Basic [REDACTED]"},
		{"a short word after bearer is kept", "Bearer token", "Bearer token"},
		{"token=", "GET /v1?access_token=abc123&x=1 failed", "GET /v1?access_token=[REDACTED]&x=1 failed"},
		{"password=", "login password=hunter2 rejected", "login password=[REDACTED] rejected"},
		{"api_key: value", "bad api_key: 9f8e7d6c5b4a", "bad api_key: [REDACTED]"},
		{"JSON-ish key and value", `{"password":"p@ss w0rd","user":"u"}`, `{"password":"[REDACTED]","user":"u"}`},
		{"token: prose is kept", "token: expired", "token: expired"},
		{"authorization=Bearer", "authorization=Bearer abcdefgh12345678 next", "authorization=Bearer [REDACTED] next"},
		{"OpenAI-style key", "invalid key sk-proj-AbCdEf0123456789xyz", "invalid key [REDACTED]"},
		{"GitHub token", "push with ghp_R2d2C3poR2d2C3poR2d2C3poR2d2C3po1234 denied", "push with [REDACTED] denied"},
		{"AWS access key id", "AKIAIOSFODNN7EXAMPLE is not authorized", "[REDACTED] is not authorized"},
		{"Google API key", "key=AIzaSyA-1234567890abcdefghijklmnopqrs", "key=[REDACTED]"},
		{"Slack token", "xoxb-1234567890-abcdefghij", "[REDACTED]"},
		{"JWT", "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJrYiJ9.c2lnbmF0dXJl expired", "token [REDACTED] expired"},
		{"long random string", "session 7fGh2KqLmN9pQrStUvWxYz3AbCdEfGhJ4kLm lost", "session [REDACTED] lost"},
		{"URL password", "dial postgres://app:S3cr3t@db:5432/crm failed", "dial postgres://app:[REDACTED]@db:5432/crm failed"},
		{"URL without password", "see https://example.com:8443/a?b=c", "see https://example.com:8443/a?b=c"},
		{"UUIDs are kept", "request 550e8400-e29b-41d4-a716-446655440000 failed", "request 550e8400-e29b-41d4-a716-446655440000 failed"},
		{"paths are kept", "open /var/lib/postgresql/16/main/pg_wal/000000010000000000000001: no space", "open /var/lib/postgresql/16/main/pg_wal/000000010000000000000001: no space"},
		{"long lowercase words are kept", "internationalization_configuration_loader_failed", "internationalization_configuration_loader_failed"},
		{"two secrets", "token=a1 and password=b2", "token=[REDACTED] and password=[REDACTED]"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.ScrubMessage(tt.in); got != tt.want {
				t.Errorf("ScrubMessage(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestScrubMessageDenyPatterns(t *testing.T) {
	r, err := NewRedactor(RedactConfig{Deny: []string{"ssn"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.ScrubMessage("lookup user_ssn=123-45-6789 failed"), "lookup user_ssn=[REDACTED] failed"; got != want {
		t.Errorf("ScrubMessage = %q, want %q", got, want)
	}
}

func TestScrubMessageNoAllocWhenClean(t *testing.T) {
	r := DefaultRedactor()
	msg := strings.Repeat("查询失败：数据库连接池耗尽 pool exhausted ", 10)
	if n := testing.AllocsPerRun(100, func() { _ = r.ScrubMessage(msg) }); n != 0 {
		t.Errorf("ScrubMessage of clean text allocates %v times, want 0", n)
	}
}
