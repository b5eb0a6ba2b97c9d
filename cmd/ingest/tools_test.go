package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
)

// TestToolsAndValidatingReplay records a tool list with `ingest tools`,
// then replays captures: the call before the definition is not validated,
// the seed article's misspelled department after it is, and a tools/list
// line in the capture file brings a new version.
func TestToolsAndValidatingReplay(t *testing.T) {
	srv, err := chtest.StartServer(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ch := []string{"-clickhouse-addr", srv.Addr, "-clickhouse-database", "tools_test"}
	dir := t.TempDir()
	v1 := `{"name":"search_docs","inputSchema":{"type":"object","properties":{"department":{"type":"string","enum":["finance","engineering","hr","sales","legal"]},"q":{"type":"string"}},"required":["department","q"]}}`
	v2 := `{"name":"search_docs","inputSchema":{"type":"object","properties":{"department":{"type":"string","enum":["finance","engineering","hr","sales","legal","it"]},"q":{"type":"string"}},"required":["department","q"]}}`
	tools := filepath.Join(dir, "tools.json")
	os.WriteFile(tools, []byte(`{"tools":[`+v1+`]}`), 0o644)
	out, err := runCmd(t, append(append([]string{"tools", "-tenant", "acme", "-server", "kb", "-time", "2026-11-29T10:00:00Z"}, ch...), tools)...)
	if err != nil || !strings.Contains(out, "recorded 1 definitions of server kb (tenant acme) seen at 2026-11-29T10:00:00Z") {
		t.Fatalf("tools: %q %v", out, err)
	}
	if _, err := runCmd(t, append(append([]string{"tools"}, ch...), filepath.Join(dir, "missing.json"))...); err == nil {
		t.Error("tools of a missing file: want an error")
	}
	call := func(at, id, dept string) string {
		return `{"time":"` + at + `","tenant":"acme","server":"kb","session_id":"s1","request":{"jsonrpc":"2.0","id":` + id +
			`,"method":"tools/call","params":{"name":"search_docs","arguments":{"department":"` + dept + `","q":"travel"}}},` +
			`"response":{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"No documents found"}],"isError":false}}}`
	}
	captures := filepath.Join(dir, "captures.ndjson")
	os.WriteFile(captures, []byte(strings.Join([]string{
		call("2026-11-29T09:59:00Z", "1", "finace"), // before any definition
		call("2026-11-29T10:05:00Z", "2", "finace"),
		call("2026-11-29T10:06:00Z", "3", "finance"),
		`{"time":"2026-11-29T11:00:00Z","tenant":"acme","server":"kb","request":{"jsonrpc":"2.0","id":9,"method":"tools/list"},"response":{"jsonrpc":"2.0","id":9,"result":{"tools":[` + v2 + `]}}}`,
		call("2026-11-29T11:05:00Z", "4", "it"),
	}, "\n")), 0o644)
	out, err = runCmd(t, append(append([]string{"replay"}, ch...), captures)...)
	if err != nil || !strings.Contains(out, "replay: 4 accepted, 0 skipped, 0 rejected, 1 tool lists") {
		t.Fatalf("replay: %q %v", out, err)
	}
	conn, err := chtest.Open(srv.Addr, "tools_test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var rows []struct {
		Tool       string `ch:"t"`
		Path       string `ch:"p"`
		Reason     string `ch:"r"`
		Suggestion string `ch:"s"`
	}
	if err := conn.Select(context.Background(), &rows, "SELECT toString(tool) AS t, path AS p, toString(reason) AS r, suggestion AS s FROM call_violations FINAL ORDER BY ts_ms"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Path+" "+r.Reason+" "+r.Suggestion)
	}
	want := []string{"department not_in_enum finance"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("violations %q, want %q", got, want)
	}
	// Calls 2-4 were validated (3 and 4 passed); call 1 came before any definition.
	var flags []struct {
		V uint8 `ch:"v"`
	}
	if err := conn.Select(context.Background(), &flags, "SELECT args_validated AS v FROM calls FINAL ORDER BY ts_ms"); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(flags); got != "[{0} {1} {1} {1}]" {
		t.Errorf("args_validated %s, want [{0} {1} {1} {1}]", got)
	}
	var n []struct {
		Defs uint64 `ch:"d"`
	}
	if err := conn.Select(context.Background(), &n, "SELECT count() AS d FROM tool_definitions FINAL"); err != nil || n[0].Defs != 2 {
		t.Errorf("tool_definitions: %v %v, want 2 versions", n, err)
	}
	if _, err := runCmd(t, append(append([]string{"replay", "-validate-schemas=false"}, ch...), captures)...); err != nil {
		t.Errorf("replay without validation: %v", err)
	}
}

func TestSampleToolsList(t *testing.T) {
	out, err := runCmd(t, "sample", "-tools-list", "-sessions", "5", "-end", "2026-11-29T12:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i, line := range lines[:10] {
		defs, err := pipeline.DecodeToolsList([]byte(line), nil)
		if err != nil || len(defs) == 0 {
			t.Fatalf("line %d is no tool list: %v", i+1, err)
		}
	}
	if _, err := pipeline.DecodeToolsList([]byte(lines[10]), nil); !errors.Is(err, pipeline.ErrSkip) {
		t.Errorf("line 11: %v, want a tools/call line", err)
	}
}
