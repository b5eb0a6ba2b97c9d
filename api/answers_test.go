package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
)

func withArgs(c pipeline.Call, kv ...string) pipeline.Call {
	c.ArgKeys, c.ArgValues = nil, nil
	for i := 0; i+1 < len(kv); i += 2 {
		c.ArgKeys = append(c.ArgKeys, kv[i])
		c.ArgValues = append(c.ArgValues, kv[i+1])
	}
	return c
}

func TestAnswerEndpoints(t *testing.T) {
	var fx []pipeline.Call
	for i := 0; i < 25; i++ {
		cat, fail := "OK", false
		switch {
		case i < 4:
			cat = "EMPTY_RESULT"
		case i < 14:
			cat, fail = "INVALID_ARGUMENT", true
		}
		dept := "finance"
		if i < 4 {
			dept = "finace"
		}
		fx = append(fx, withArgs(fixtureCall("search_docs", cat, fail, 0, time.Duration(i)*time.Second, fmt.Sprint(i)), "department", dept))
	}
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, fx)
			srv := newServer(t, e.DB)
			for _, tc := range []struct{ path, want string }{
				{"/api/v1/empty-results?arg_key=department",
					`[{"tool":"search_docs","arg_key":"department","arg_value":"finace","calls":4,"empty":4,"rate":1},{"tool":"search_docs","arg_key":"department","arg_value":"finance","calls":11,"empty":0,"rate":0}]`},
				{"/api/v1/empty-results?min_calls=5",
					`[{"tool":"search_docs","arg_key":"department","arg_value":"finance","calls":11,"empty":0,"rate":0}]`},
				{"/api/v1/invalid-argument-spikes?from=2026-11-29T11:00:00Z&to=2026-11-29T12:00:00Z",
					`[{"tool":"search_docs","time":"2026-11-29T11:00:00Z","calls":25,"invalid":10,"share":0.4,"baseline_share":0,"ratio":0,"top_args":[{"arg_key":"department","arg_value":"finance","count":10}],"definition_changed_at":null}]`},
				{"/api/v1/overview",
					`[{"calls":25,"failures":10,"non_failed":15,"empty":4,"misflagged":0,"tools":1,"sessions":1,"failure_rate":0.4,"empty_rate":0.26666666666666666,"top_failing_tools":[{"tool":"search_docs","calls":25,"failures":10,"rate":0.4}]}]`},
			} {
				status, body := get(t, srv, tc.path)
				got, _ := json.Marshal(body["rows"])
				if status != http.StatusOK || !jsonEqual(t, string(got), tc.want) {
					t.Errorf("%s: %d\n got %s\nwant %s", tc.path, status, got, tc.want)
				}
			}
			for _, tc := range []struct{ path, wantErr string }{
				{"/api/v1/empty-results?limit=0", "limit: 0 is outside"},
				{"/api/v1/empty-results?min_calls=x", "min_calls: want an integer"},
				{"/api/v1/invalid-argument-spikes?baseline=1m", "baseline: 1m0s is outside"},
				{"/api/v1/invalid-argument-spikes?step=1m&baseline=2000h", "buckets"},
				{"/api/v1/overview?step=1h", `unknown parameter "step"`},
			} {
				status, body := get(t, srv, tc.path)
				if status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(body["error"]), tc.wantErr) {
					t.Errorf("%s: %d %v, want 400 containing %q", tc.path, status, body, tc.wantErr)
				}
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// TestCallsEndpoint drills from an answer's row to its calls: the
// empty-results row department=finace to its four calls, a failure-rates
// row (category and code) to its calls, page by page through the cursors;
// one row shown whole; and the parameters' errors.
func TestCallsEndpoint(t *testing.T) {
	var fx []pipeline.Call
	for i := 0; i < 9; i++ {
		cat, fail, code, dept := "OK", false, int64(0), "finance"
		switch {
		case i < 4:
			cat, dept = "EMPTY_RESULT", "finace"
		case i < 7:
			cat, fail, code = "INVALID_ARGUMENT", true, -32602
		}
		c := withArgs(fixtureCall("search_docs", cat, fail, code, time.Duration(i)*time.Second, fmt.Sprint(i)), "department", dept)
		c.ArgsJSON = `{"department":"` + dept + `"}`
		fx = append(fx, c)
	}
	fx[6].RPCError, fx[6].RPCMessage, fx[6].Message = 1, "Invalid params: department must be one of finance, legal", "Invalid params: department must be one of finance, legal"
	fx[6].ClassSource, fx[6].ClassRule, fx[6].ExpectedRetryable, fx[6].TraceID = "jsonrpc", "jsonrpc-invalid-params", 0, "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Insert(t, fx)
			srv := newServer(t, e.DB)
			times := func(path string) string {
				t.Helper()
				status, body := get(t, srv, path)
				if status != http.StatusOK {
					t.Fatalf("%s: %d %v", path, status, body)
				}
				var out []string
				for _, r := range body["rows"].([]any) {
					row := r.(map[string]any)
					out = append(out, fmt.Sprintf("%s %s", strings.TrimPrefix(row["time"].(string), "2026-11-29T"), row["category"]))
				}
				return strings.Join(out, ", ")
			}
			for _, tc := range []struct{ path, want string }{
				{"/api/v1/calls?tool=search_docs&arg_key=department&arg_value=finace",
					"11:00:03Z EMPTY_RESULT, 11:00:02Z EMPTY_RESULT, 11:00:01Z EMPTY_RESULT, 11:00:00Z EMPTY_RESULT"},
				{"/api/v1/calls?category=INVALID_ARGUMENT&code=-32602",
					"11:00:06Z INVALID_ARGUMENT, 11:00:05Z INVALID_ARGUMENT, 11:00:04Z INVALID_ARGUMENT"},
				{"/api/v1/calls?failed=false&limit=3", "11:00:08Z OK, 11:00:07Z OK, 11:00:03Z EMPTY_RESULT"},
				{"/api/v1/calls?failed=false&limit=3&before=1795950003000-1795950003000",
					"11:00:02Z EMPTY_RESULT, 11:00:01Z EMPTY_RESULT, 11:00:00Z EMPTY_RESULT"},
				{"/api/v1/calls?failed=false&limit=3&before=1795950000000-1795950000000", ""},
				{"/api/v1/calls?code=0&failed=true", ""},
				{"/api/v1/calls?trace_id=4bf92f3577b34da6a3ce929d0e0e4736", "11:00:06Z INVALID_ARGUMENT"},
				{"/api/v1/calls?misflagged=true", ""},
			} {
				if got := times(tc.path); got != tc.want {
					t.Errorf("%s:\n got %s\nwant %s", tc.path, got, tc.want)
				}
			}
			_, body := get(t, srv, "/api/v1/calls?limit=1&before=1795950007000-1795950007000")
			got, _ := json.Marshal(body["rows"])
			want := `[{"time":"2026-11-29T11:00:06Z","tenant":"acme","server":"kb","tool":"search_docs","session":"s1","session_id":"s1",
				"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","request_id":"6","call_id":"1795950006000","client":"","protocol_version":"",
				"source":"","side":"","duration_ms":0,"category":"INVALID_ARGUMENT","failed":true,"declared_retryable":-1,
				"expected_retryable":0,"class_source":"jsonrpc","class_rule":"jsonrpc-invalid-params","misflagged":false,
				"has_response":true,"is_error":1,"rpc_error":true,"code":-32602,
				"rpc_message":"Invalid params: department must be one of finance, legal","error_code":"","result_type":"",
				"content_blocks":1,"text_bytes":0,"has_structured":false,
				"message":"Invalid params: department must be one of finance, legal","retry_after_ms":0,"continuation":false,
				"args":{"department":"finance"},"taxonomy_version":"","ingested":"1970-01-01T00:00:00.001Z",
				"cursor":"1795950006000-1795950006000"}]`
			if !jsonEqual(t, string(got), want) {
				t.Errorf("one call whole:\n got %s\nwant %s", got, want)
			}
			for _, tc := range []struct{ path, wantErr string }{
				{"/api/v1/calls?category=INVALID", `category: "INVALID" is not a category (OK, `},
				{"/api/v1/calls?failed=maybe", `failed: want true or false, got "maybe"`},
				{"/api/v1/calls?misflagged=", "misflagged: want true or false, got an empty value"},
				{"/api/v1/calls?code=", "code: want an integer"},
				{"/api/v1/calls?code=x", "code: want an integer"},
				{"/api/v1/calls?arg_value=finace", "arg_value: give arg_key too"},
				{"/api/v1/calls?before=1795950006000", "before: want the cursor of a row"},
				{"/api/v1/calls?before=-1-2", "before: want the cursor of a row"},
				{"/api/v1/calls?limit=1001", "limit: 1001 is outside [1, 1000]"},
				{"/api/v1/calls?session=" + strings.Repeat("s", 300), "session: longer than 256 bytes"},
			} {
				status, body := get(t, srv, tc.path)
				if status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(body["error"]), tc.wantErr) {
					t.Errorf("%s: %d %v, want 400 containing %q", tc.path, status, body, tc.wantErr)
				}
			}
		})
	}
}
