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

// toolRows: search_docs changes at 11:00 (the department enum is added);
// two calls after it send "finace": one refused, one answered empty.
func toolRows() pipeline.ToolRows {
	def := func(hash uint64, schema string) pipeline.ToolDef {
		return pipeline.ToolDef{Tenant: "acme", Server: "kb", Tool: "search_docs", Hash: hash, Title: "Search documents",
			InputSchema: schema, ReadOnlyHint: 1, DestructiveHint: -1, IdempotentHint: -1, OpenWorldHint: -1,
			Definition: "{}", IngestedMs: 1}
	}
	seen := func(hash uint64, at time.Duration) pipeline.ToolSighting {
		ts := now.Add(-time.Hour).Add(at)
		return pipeline.ToolSighting{Time: ts, TimeMs: ts.UnixMilli(), Tenant: "acme", Server: "kb", Tool: "search_docs",
			DefinitionHash: hash, IngestedMs: 1}
	}
	viol := func(id uint64, at time.Duration, hash uint64, path, reason, suggestion, category string) pipeline.Violation {
		ts := now.Add(-time.Hour).Add(at)
		v := pipeline.Violation{Time: ts, TimeMs: ts.UnixMilli(), Tenant: "acme", Server: "kb", Tool: "search_docs",
			CallID: id, DefinitionHash: hash, Side: pipeline.SideArguments, Path: path, Reason: reason, Suggestion: suggestion,
			Category: category, IngestedMs: 1}
		if reason != "" {
			v.Detail = "allowed: finance, engineering, hr, sales, legal"
		}
		if category == "INVALID_ARGUMENT" {
			v.IsFailure = 1
		}
		return v
	}
	return pipeline.ToolRows{
		Definitions: []pipeline.ToolDef{def(1, `{"type":"object"}`), def(2, `{"type":"object","required":["department"]}`)},
		Sightings:   []pipeline.ToolSighting{seen(1, -2*time.Hour), seen(2, 0)},
		Violations: []pipeline.Violation{
			viol(10, -30*time.Minute, 1, "", "", "", "OK"),
			viol(11, time.Minute, 2, "department", "not_in_enum", "finance", "INVALID_ARGUMENT"),
			viol(12, 2*time.Minute, 2, "department", "not_in_enum", "finance", "EMPTY_RESULT"),
			viol(13, 3*time.Minute, 2, "", "", "", "OK"),
		},
	}
}

func TestToolEndpoints(t *testing.T) {
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.InsertTools(t, toolRows())
			srv := newServer(t, e.DB)
			status, body := get(t, srv, "/api/v1/tools?tenant=acme")
			if status != http.StatusOK {
				t.Fatalf("tools: %d %v", status, body)
			}
			rows := body["rows"].([]any)
			if len(rows) != 2 {
				t.Fatalf("tools rows: %v", rows)
			}
			v2 := rows[1].(map[string]any)
			if v2["version"] != 2.0 || v2["definition_hash"] != "0000000000000002" || v2["first_seen"] != "2026-11-29T11:00:00Z" ||
				v2["current"] != true || v2["read_only_hint"] != true || v2["idempotent_hint"] != nil ||
				v2["input_schema"].(map[string]any)["required"] == nil {
				t.Errorf("version 2: %v", v2)
			}

			status, body = get(t, srv, "/api/v1/schema-violations?tool=search_docs")
			if status != http.StatusOK {
				t.Fatalf("schema-violations: %d %v", status, body)
			}
			got, _ := json.Marshal(body["rows"])
			want := `[{"accepted_calls":1,"calls":2,"definition_hash":"0000000000000002","detail":"allowed: finance, engineering, hr, sales, legal",` +
				`"invalid_argument_calls":1,"path":"department","reason":"not_in_enum","share":0.5,"side":"arguments","suggestion":"finance",` +
				`"tool":"search_docs","validated_calls":4}]`
			if string(got) != want {
				t.Errorf("schema-violations rows\n got %s\nwant %s", got, want)
			}
			for _, bad := range []struct{ query, wantErr string }{
				{"limit=0", "limit: 0 is outside"},
				{"min_calls=x", "min_calls: want an integer"},
				{"side=result", `unknown parameter "side"`},
			} {
				status, body := get(t, srv, "/api/v1/schema-violations?"+bad.query)
				if status != http.StatusBadRequest || !strings.Contains(body["error"].(string), bad.wantErr) {
					t.Errorf("%s: %d %v, want 400 containing %q", bad.query, status, body, bad.wantErr)
				}
			}
			if status, body := get(t, srv, "/api/v1/tools?step=1h"); status != http.StatusBadRequest {
				t.Errorf("tools with an unknown parameter: %d %v", status, body)
			}
		})
	}
}

// TestUnknownToolsEndpoint: search_docs answered and listed (toolRows),
// a namespaced name and an invented one refused; the whole row as JSON,
// the name filter and the limit's bounds.
func TestUnknownToolsEndpoint(t *testing.T) {
	for _, e := range chtest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.InsertTools(t, toolRows())
			e.Insert(t, []pipeline.Call{
				fixtureCall("search_docs", "OK", false, 0, 0, "1"),
				fixtureCall("mcp__kb__search_docs", "UNKNOWN_TOOL", true, -32602, time.Minute, "2"),
				fixtureCall("mcp__kb__search_docs", "UNKNOWN_TOOL", true, -32602, 2*time.Minute, "3"),
				fixtureCall("summon_dragon", "UNKNOWN_TOOL", true, -32601, 3*time.Minute, "4"),
			})
			srv := newServer(t, e.DB)
			status, body := get(t, srv, "/api/v1/unknown-tools?tenant=acme")
			if status != http.StatusOK {
				t.Fatalf("unknown-tools: %d %v", status, body)
			}
			got, _ := json.Marshal(body["rows"])
			want := `[{"answered_calls":0,"calls":2,"first_seen":"2026-11-29T11:01:00Z","known_tools":1,"last_answered":null,` +
				`"last_listed":null,"last_seen":"2026-11-29T11:02:00Z","server":"kb","sessions":1,"suggestion":"search_docs",` +
				`"tenant":"acme","tool":"mcp__kb__search_docs","verdict":"namespaced"},` +
				`{"answered_calls":0,"calls":1,"first_seen":"2026-11-29T11:03:00Z","known_tools":1,"last_answered":null,` +
				`"last_listed":null,"last_seen":"2026-11-29T11:03:00Z","server":"kb","sessions":1,"suggestion":"",` +
				`"tenant":"acme","tool":"summon_dragon","verdict":"invented"}]`
			if string(got) != want {
				t.Errorf("unknown-tools rows\n got %s\nwant %s", got, want)
			}
			status, body = get(t, srv, "/api/v1/unknown-tools?tool=summon_dragon&limit=1")
			if rows, _ := body["rows"].([]any); status != http.StatusOK || len(rows) != 1 {
				t.Errorf("tool=summon_dragon: %d %v", status, body)
			}
			for _, bad := range []struct{ query, wantErr string }{
				{"limit=0", "limit"},
				{"limit=1001", "limit"},
				{"min_calls=2", `unknown parameter "min_calls"`},
			} {
				status, body := get(t, srv, "/api/v1/unknown-tools?"+bad.query)
				if status != http.StatusBadRequest || !strings.Contains(body["error"].(string), bad.wantErr) {
					t.Errorf("%s: %d %v, want 400 containing %q", bad.query, status, body, bad.wantErr)
				}
			}
		})
	}
}
