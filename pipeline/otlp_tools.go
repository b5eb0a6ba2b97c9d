package pipeline

import (
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// toolsListSpan reads the definitions from a tools/list span of a dialect
// that records the whole result: Logfire ("response", the result object)
// and OpenLIT ("mcp.response.payload" or "mcp.result"). Semconv, the Python
// SDK, FastMCP, mcp-go, Sentry, OpenLLMetry and MCPcat record no tool list
// (docs/otel.md). ok is false for any other span, for a span without a
// readable list, and when Tools is not set; the span is then only skipped.
// The definitions are seen at the span's start; the tenant comes from the
// resource as for calls, the server from service.name on the server side
// and from mcp.server.name or server.address on the client side.
func (d *traceDecoder) toolsListSpan(sp *spanView) (defs []ToolDef, ok bool) {
	if !d.toolsListCandidate(sp) {
		return nil, false
	}
	a, ra := sp.attrs, sp.res
	var payload string
	for _, k := range [...]string{"response", "mcp.response.payload", "mcp.result"} {
		if s, found := d.rawJSON(a, k); found && strings.Contains(s, `"tools"`) {
			payload = s
			break
		}
	}
	if payload == "" {
		return nil, false
	}
	tenant := d.str(ra, d.cfg.TenantAttribute)
	var server string
	if sp.kind == ptrace.SpanKindServer || strings.HasPrefix(sp.name, "MCP server handle request") {
		server = d.str(ra, "service.name")
		if strings.HasPrefix(server, "unknown_service") {
			server = ""
		}
	}
	if server == "" {
		server = d.str(a, "mcp.server.name", "server.address")
	}
	at := time.Unix(0, int64(min(sp.start, uint64(maxTimeMs)*1e6)))
	defs, err := ParseToolList([]byte(payload), tenant, server, at, &d.p.Decode)
	if err != nil || len(defs) == 0 {
		return nil, false
	}
	return defs, true
}

// toolsListCandidate reports whether toolsListSpan reads sp: a tools/list
// span with a start time, when Tools is set.
func (d *traceDecoder) toolsListCandidate(sp *spanView) bool {
	if d.p.Tools == nil {
		return false
	}
	method := d.str(sp.attrs, "mcp.method.name", "mcp.method", "rpc.method")
	if method == "" {
		method, _ = nameMethod(sp.name)
	}
	return method == methodToolsList && sp.start != 0
}
