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
