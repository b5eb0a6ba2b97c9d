package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
)

// retryFixture: in session s1, a RATE_LIMITED failure with a retry-after
// hint of 60 s retried after 30 s (too soon; failed again, its hint 30 s)
// and 30 s later (ok, as the hint asked); a NOT_FOUND failure (declared not
// retryable) retried once with the same arguments 5 s later, in vain.
func retryFixture() []pipeline.Call {
	calls := []pipeline.Call{
		fixtureCall("search", "RATE_LIMITED", true, 0, 0, "1"),
		fixtureCall("search", "RATE_LIMITED", true, 0, 30*time.Second, "2"),
		fixtureCall("search", "OK", false, 0, time.Minute, "3"),
		fixtureCall("search", "NOT_FOUND", true, 0, 10*time.Minute, "4"),
		fixtureCall("search", "NOT_FOUND", true, 0, 10*time.Minute+5*time.Second, "5"),
	}
	calls[0].ExpectedRetryable, calls[1].ExpectedRetryable = 1, 1
	calls[0].RetryAfterMs, calls[1].RetryAfterMs = 60_000, 30_000
	calls[3].DeclaredRetryable, calls[4].DeclaredRetryable = 0, 0
	return calls
}

func TestRetryEndpoints(t *testing.T) {
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, retryFixture())
			srv := newServer(t, e.DB)
			for _, tc := range []struct{ path, want string }{
				{"/api/v1/retry-outcomes?tenant=acme", `[` +
					`{"args_changed_chains":0,"avg_attempts":2,"category":"NOT_FOUND","chains":1,"declared_retryable":0,"expected_retryable":0,"no_retry":0,"retry_then_fail":1,"retry_then_success":0,"success_share":0,"tool":"search"},` +
					`{"args_changed_chains":0,"avg_attempts":3,"category":"RATE_LIMITED","chains":1,"declared_retryable":-1,"expected_retryable":1,"no_retry":0,"retry_then_fail":0,"retry_then_success":1,"success_share":1,"tool":"search"}]`},
				// 30 s gaps are no retries in a 20 s window.
				{"/api/v1/retry-outcomes?retry_window=20s&tool=search", `[` +
					`{"args_changed_chains":0,"avg_attempts":2,"category":"NOT_FOUND","chains":1,"declared_retryable":0,"expected_retryable":0,"no_retry":0,"retry_then_fail":1,"retry_then_success":0,"success_share":0,"tool":"search"},` +
					`{"args_changed_chains":0,"avg_attempts":1,"category":"RATE_LIMITED","chains":2,"declared_retryable":-1,"expected_retryable":1,"no_retry":2,"retry_then_fail":0,"retry_then_success":0,"success_share":0,"tool":"search"}]`},
				{"/api/v1/recalls?retry_window=60", `[` +
					`{"before_retry_after":0,"category":"NOT_FOUND","failures":2,"rate":0.5,"tool":"search","unchanged":1,"with_next_call":1,"with_retry_after":0},` +
					`{"before_retry_after":1,"category":"RATE_LIMITED","failures":2,"rate":1,"tool":"search","unchanged":2,"with_next_call":2,"with_retry_after":2}]`},
				{"/api/v1/misclassifications?min_chains=1", `[` +
					`{"calls":2,"category":"NOT_FOUND","chains":1,"evidence":"1 chain retried with unchanged arguments (1 retry), 0 recovered","kind":"retried_non_retryable","tool":"search"}]`},
				// The RATE_LIMITED chain (three calls) and the NOT_FOUND one
				// (two), most calls first; min_attempts defaults to 5.
				{"/api/v1/retry-loops?min_attempts=2", `[` +
					`{"args_changed":false,"attempts":3,"category":"RATE_LIMITED","client":"","declared_retryable":-1,"duration_ms":60000,"end":"2026-11-29T11:01:00Z","expected_retryable":1,"first_call_id":"1795950000000","outcome":"retry_then_success","server":"kb","session":"s1","start":"2026-11-29T11:00:00Z","tenant":"acme","tool":"search"},` +
					`{"args_changed":false,"attempts":2,"category":"NOT_FOUND","client":"","declared_retryable":0,"duration_ms":5000,"end":"2026-11-29T11:10:05Z","expected_retryable":0,"first_call_id":"1795950600000","outcome":"retry_then_fail","server":"kb","session":"s1","start":"2026-11-29T11:10:00Z","tenant":"acme","tool":"search"}]`},
				{"/api/v1/retry-loops?min_attempts=3&limit=1", `[` +
					`{"args_changed":false,"attempts":3,"category":"RATE_LIMITED","client":"","declared_retryable":-1,"duration_ms":60000,"end":"2026-11-29T11:01:00Z","expected_retryable":1,"first_call_id":"1795950000000","outcome":"retry_then_success","server":"kb","session":"s1","start":"2026-11-29T11:00:00Z","tenant":"acme","tool":"search"}]`},
				{"/api/v1/retry-loops", `[]`},
				{"/api/v1/misclassifications", `[]`}, // min_chains defaults to 5
				{"/api/v1/recalls?tenant=nobody", `[]`},
			} {
				status, body := get(t, srv, tc.path)
				if status != http.StatusOK {
					t.Fatalf("GET %s: status %d: %v", tc.path, status, body)
				}
				if body["from"] != "2026-11-28T12:00:00Z" || body["to"] != "2026-11-29T12:00:00Z" {
					t.Errorf("GET %s: default range: from %v to %v", tc.path, body["from"], body["to"])
				}
				if got, _ := json.Marshal(body["rows"]); string(got) != tc.want {
					t.Errorf("GET %s: rows\n got %s\nwant %s", tc.path, got, tc.want)
				}
			}
		})
	}
}

func TestRetryEndpointsBadParametersAre400(t *testing.T) {
	e := chtest.Engines(t)[0]
	srv := newServer(t, e.DB)
	for _, tc := range []struct{ path, wantErr string }{
		{"/api/v1/retry-outcomes?retry_window=abc", `retry_window: want a duration like 60s or 1h, got "abc"`},
		{"/api/v1/retry-outcomes?retry_window=0s", "retry_window: 0s is outside [1s, 1h0m0s]"},
		{"/api/v1/recalls?retry_window=2h", "retry_window: 2h0m0s is outside [1s, 1h0m0s]"},
		{"/api/v1/recalls?retry_window=-5", "retry_window: -5s is outside"},
		{"/api/v1/misclassifications?min_chains=-1", "min_chains: -1 is outside [0, 1000000]"},
		{"/api/v1/misclassifications?min_chains=five", `min_chains: want an integer, got "five"`},
		{"/api/v1/retry-outcomes?min_chains=5", `unknown parameter "min_chains"`},
		{"/api/v1/recalls?from=2026-11-29T11:00:00Z&to=2026-11-29T10:00:00Z", "must be before"},
		{"/api/v1/misclassifications?retry_window=1m&retry_window=2m", `parameter "retry_window" given 2 times`},
		{"/api/v1/retry-outcomes?by=server", `by: want tool, pair or client, got "server"`},
		{"/api/v1/failure-rates?by=pair", `unknown parameter "by"`},
		{"/api/v1/retry-loops?min_attempts=1", "min_attempts: 1 is outside [2, 1000000]"},
		{"/api/v1/retry-loops?limit=0", "limit: 0 is outside [1, 1000]"},
		{"/api/v1/retry-loops?limit=1001", "limit: 1001 is outside [1, 1000]"},
		{"/api/v1/retry-loops?by=pair", `unknown parameter "by"`},
		{"/api/v1/retry-loops?retry_window=0s", "retry_window: 0s is outside [1s, 1h0m0s]"},
	} {
		status, body := get(t, srv, tc.path)
		if msg, _ := body["error"].(string); status != http.StatusBadRequest || !strings.Contains(msg, tc.wantErr) {
			t.Errorf("GET %s: got %d %v, want 400 containing %q", tc.path, status, body, tc.wantErr)
		}
	}
}

// TestRetryEndpointsByPair: server wiki repeats kb's NOT_FOUND chain under
// the same tool name. By tool (the default) the two chains add up; with
// by=pair each (tenant, server) has its own rows, named first in each row,
// and a pair's one chain falls short of min_chains=2.
func TestRetryEndpointsByPair(t *testing.T) {
	calls := retryFixture()
	for _, c := range calls[3:] {
		c.Server = "wiki"
		c.CallID ^= 1 << 62 // ingest hashes the server into the call id
		calls = append(calls, c)
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, calls)
			srv := newServer(t, e.DB)
			for _, tc := range []struct{ path, want string }{
				{"/api/v1/retry-outcomes?by=tool", `[` +
					`{"tool":"search","category":"NOT_FOUND","declared_retryable":0,"expected_retryable":0,"chains":2,"retry_then_success":0,"retry_then_fail":2,"no_retry":0,"success_share":0,"avg_attempts":2,"args_changed_chains":0},` +
					`{"tool":"search","category":"RATE_LIMITED","declared_retryable":-1,"expected_retryable":1,"chains":1,"retry_then_success":1,"retry_then_fail":0,"no_retry":0,"success_share":1,"avg_attempts":3,"args_changed_chains":0}]`},
				{"/api/v1/retry-outcomes?by=pair", `[` +
					`{"tenant":"acme","server":"kb","tool":"search","category":"NOT_FOUND","declared_retryable":0,"expected_retryable":0,"chains":1,"retry_then_success":0,"retry_then_fail":1,"no_retry":0,"success_share":0,"avg_attempts":2,"args_changed_chains":0},` +
					`{"tenant":"acme","server":"kb","tool":"search","category":"RATE_LIMITED","declared_retryable":-1,"expected_retryable":1,"chains":1,"retry_then_success":1,"retry_then_fail":0,"no_retry":0,"success_share":1,"avg_attempts":3,"args_changed_chains":0},` +
					`{"tenant":"acme","server":"wiki","tool":"search","category":"NOT_FOUND","declared_retryable":0,"expected_retryable":0,"chains":1,"retry_then_success":0,"retry_then_fail":1,"no_retry":0,"success_share":0,"avg_attempts":2,"args_changed_chains":0}]`},
				{"/api/v1/recalls?by=pair", `[` +
					`{"tenant":"acme","server":"kb","tool":"search","category":"NOT_FOUND","failures":2,"with_next_call":1,"unchanged":1,"with_retry_after":0,"before_retry_after":0,"rate":0.5},` +
					`{"tenant":"acme","server":"kb","tool":"search","category":"RATE_LIMITED","failures":2,"with_next_call":2,"unchanged":2,"with_retry_after":2,"before_retry_after":1,"rate":1},` +
					`{"tenant":"acme","server":"wiki","tool":"search","category":"NOT_FOUND","failures":2,"with_next_call":1,"unchanged":1,"with_retry_after":0,"before_retry_after":0,"rate":0.5}]`},
				{"/api/v1/misclassifications?min_chains=2", `[` +
					`{"kind":"retried_non_retryable","tool":"search","category":"NOT_FOUND","chains":2,"calls":4,"evidence":"2 chains retried with unchanged arguments (2 retries), 0 recovered"}]`},
				{"/api/v1/misclassifications?min_chains=2&by=pair", `[]`},
				{"/api/v1/misclassifications?min_chains=1&by=pair&server=wiki", `[` +
					`{"tenant":"acme","server":"wiki","kind":"retried_non_retryable","tool":"search","category":"NOT_FOUND","chains":1,"calls":2,"evidence":"1 chain retried with unchanged arguments (1 retry), 0 recovered"}]`},
			} {
				status, body := getWith(t, srv, "", tc.path)
				if status != http.StatusOK {
					t.Fatalf("GET %s: status %d: %s", tc.path, status, body)
				}
				if got := rowsOf(t, body); got != tc.want {
					t.Errorf("GET %s: rows\n got %s\nwant %s", tc.path, got, tc.want)
				}
			}
		})
	}
}

// TestChainEndpointsByClient: cursor repeats claude-desktop's NOT_FOUND
// chain in a session of its own. With by=client /recalls and /retry-outcomes
// give each client its own rows, named first in each row; misclassifications
// do not group by client.
func TestChainEndpointsByClient(t *testing.T) {
	calls := retryFixture()
	for i := range calls {
		calls[i].Client = "claude-desktop"
	}
	for _, c := range calls[3:] {
		c.Client, c.SessionID, c.SessionKey = "cursor", "s2", "s2"
		c.CallID ^= 1 << 61
		calls = append(calls, c)
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, calls)
			srv := newServer(t, e.DB)
			status, body := getWith(t, srv, "", "/api/v1/recalls?by=client")
			if status != http.StatusOK {
				t.Fatalf("recalls by client: status %d: %s", status, body)
			}
			want := `[` +
				`{"client":"claude-desktop","tool":"search","category":"NOT_FOUND","failures":2,"with_next_call":1,"unchanged":1,"with_retry_after":0,"before_retry_after":0,"rate":0.5},` +
				`{"client":"claude-desktop","tool":"search","category":"RATE_LIMITED","failures":2,"with_next_call":2,"unchanged":2,"with_retry_after":2,"before_retry_after":1,"rate":1},` +
				`{"client":"cursor","tool":"search","category":"NOT_FOUND","failures":2,"with_next_call":1,"unchanged":1,"with_retry_after":0,"before_retry_after":0,"rate":0.5}]`
			if got := rowsOf(t, body); got != want {
				t.Errorf("recalls by client\n got %s\nwant %s", got, want)
			}
			status, body = getWith(t, srv, "", "/api/v1/retry-outcomes?by=client")
			if status != http.StatusOK {
				t.Fatalf("retry outcomes by client: status %d: %s", status, body)
			}
			want = `[` +
				`{"client":"claude-desktop","tool":"search","category":"NOT_FOUND","declared_retryable":0,"expected_retryable":0,"chains":1,"retry_then_success":0,"retry_then_fail":1,"no_retry":0,"success_share":0,"avg_attempts":2,"args_changed_chains":0},` +
				`{"client":"claude-desktop","tool":"search","category":"RATE_LIMITED","declared_retryable":-1,"expected_retryable":1,"chains":1,"retry_then_success":1,"retry_then_fail":0,"no_retry":0,"success_share":1,"avg_attempts":3,"args_changed_chains":0},` +
				`{"client":"cursor","tool":"search","category":"NOT_FOUND","declared_retryable":0,"expected_retryable":0,"chains":1,"retry_then_success":0,"retry_then_fail":1,"no_retry":0,"success_share":0,"avg_attempts":2,"args_changed_chains":0}]`
			if got := rowsOf(t, body); got != want {
				t.Errorf("retry outcomes by client\n got %s\nwant %s", got, want)
			}
			// The body is JSON: the quotes in its message are escaped.
			for path, wantErr := range map[string]string{
				"/api/v1/recalls?by=server":            `by: want tool, pair or client, got \"server\"`,
				"/api/v1/retry-outcomes?by=session":    `by: want tool, pair or client, got \"session\"`,
				"/api/v1/misclassifications?by=client": `by: want tool or pair, got \"client\"`,
			} {
				if status, body := getWith(t, srv, "", path); status != http.StatusBadRequest || !strings.Contains(body, wantErr) {
					t.Errorf("GET %s: %d %s, want 400 containing %q", path, status, body, wantErr)
				}
			}
		})
	}
}
