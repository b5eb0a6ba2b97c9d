package api_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/api"
	"github.com/mcplens/mcplens/chtest"
)

var update = flag.Bool("update", false, "rewrite docs/openapi.json")

// TestOpenAPIIsCommitted keeps docs/openapi.json equal to what the API serves.
func TestOpenAPIIsCommitted(t *testing.T) {
	got, err := api.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	const path = "../docs/openapi.json"
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run: go test ./api -run OpenAPI -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/openapi.json is stale; run `go test ./api -run OpenAPI -update` and review the diff")
	}
}

// TestOpenAPIMatchesRoutes checks that every analytics route is documented,
// every documented path is routed, and each documented parameter is accepted
// while an undocumented one is refused.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	raw, err := api.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]struct {
			Get struct {
				Parameters []struct {
					Name   string `json:"name"`
					Schema struct {
						Type   string   `json:"type"`
						Format string   `json:"format"`
						Enum   []string `json:"enum"`
					} `json:"schema"`
				} `json:"parameters"`
			} `json:"get"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	e := chtest.Engines(t)[0]
	srv := api.New(e.DB, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)), api.Config{})
	var routed []string
	for _, r := range srv.Routes() {
		if strings.HasPrefix(r.Path, "/api/v1/") && r.Path != "/api/v1/openapi.json" {
			routed = append(routed, r.Path)
		}
	}
	var documented []string
	for p := range doc.Paths {
		documented = append(documented, p)
	}
	slices.Sort(routed)
	slices.Sort(documented)
	if !slices.Equal(routed, documented) {
		t.Errorf("routes %v\ndocumented %v", routed, documented)
	}
	hs := newServer(t, e.DB)
	for path, item := range doc.Paths {
		for _, p := range item.Get.Parameters {
			v := "1"
			switch {
			case p.Name == "from":
				v = "2026-11-29T00:00:00Z"
			case p.Name == "to":
				v = "2026-11-29T12:00:00Z"
			case len(p.Schema.Enum) > 0:
				v = p.Schema.Enum[len(p.Schema.Enum)-1]
			case p.Schema.Format == "duration":
				v = "1h"
			case p.Name == "before": // a row's cursor
				v = "1764374400000-1"
			case p.Name == "min_attempts": // a chain has at least 2 calls
				v = "2"
			case p.Name == "arg_value": // given with arg_key only
				v = "x&arg_key=x"
			case p.Schema.Type == "string":
				v = "x"
			case p.Schema.Type == "boolean":
				v = "true"
			}
			if status, body := get(t, hs, path+"?"+p.Name+"="+v); status != http.StatusOK {
				t.Errorf("%s?%s=%s: %d %v (documented parameter refused)", path, p.Name, v, status, body)
			}
		}
		if status, _ := get(t, hs, path+"?undocumented=1"); status != http.StatusBadRequest {
			t.Errorf("%s accepts an undocumented parameter", path)
		}
	}
}
