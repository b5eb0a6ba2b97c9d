package pipeline

import (
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
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
func (d *traceDecoder) toolsListSpan(res pcommon.Resource, sp ptrace.Span) (defs []ToolDef, ok bool) {
	if d.p.Tools == nil {
		return nil, false
	}
	a, ra := sp.Attributes(), res.Attributes()
	method := d.str(a, "mcp.method.name", "mcp.method", "rpc.method")
	if method == "" {
		method, _ = nameMethod(sp.Name())
	}
	if method != methodToolsList || sp.StartTimestamp() == 0 {
		return nil, false
	}
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
	if sp.Kind() == ptrace.SpanKindServer || strings.HasPrefix(sp.Name(), "MCP server handle request") {
		server = d.str(ra, "service.name")
		if strings.HasPrefix(server, "unknown_service") {
			server = ""
		}
	}
	if server == "" {
		server = d.str(a, "mcp.server.name", "server.address")
	}
	at := time.Unix(0, int64(min(uint64(sp.StartTimestamp()), uint64(maxTimeMs)*1e6)))
	defs, err := ParseToolList([]byte(payload), tenant, server, at, &d.p.Decode)
	if err != nil || len(defs) == 0 {
		return nil, false
	}
	return defs, true
}
