package traffic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// captureLine is the part of a capture line that AppendServerSpan maps.
type captureLine struct {
	Time            string `json:"time"`
	DurationMs      *int64 `json:"duration_ms"`
	Tenant          string `json:"tenant"`
	Server          string `json:"server"`
	SessionID       string `json:"session_id"`
	ProtocolVersion string `json:"protocol_version"`
	Error           string `json:"error"`
	Request         struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	} `json:"request"`
	Response *struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"response"`
}

// AppendServerSpan adds to td the span that a semconv-instrumented server
// exports for the call of one capture line: tenant and service as resource
// attributes, arguments and result as gen_ai.tool.call.*, a JSON-RPC error
// as error.type, a call without an answer as error.type "timeout". With
// parent, the span has a parent span id, as a server span whose client
// propagated its trace context does: ingest stores it at once and also
// remembers it for the client's side (docs/otel.md). Without, it is a root
// span that ingest only stores. It is never a client span, which would
// wait -otlp-pair-window for its server side, a fixed delay that says
// nothing about throughput. It reports false for a line that is not a
// tools/call. The span and trace ids are derived from id: give each span
// its own.
func AppendServerSpan(td ptrace.Traces, line []byte, id uint64, parent bool) (bool, error) {
	var c captureLine
	if err := json.Unmarshal(line, &c); err != nil {
		return false, fmt.Errorf("capture line: %w", err)
	}
	if c.Request.Method != "tools/call" {
		return false, nil
	}
	start, err := time.Parse(time.RFC3339Nano, c.Time)
	if err != nil {
		return false, fmt.Errorf("capture line time: %w", err)
	}
	rs := td.ResourceSpans().AppendEmpty()
	ra := rs.Resource().Attributes()
	ra.PutStr("mcplens.tenant", c.Tenant)
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	for i := range 8 {
		tid[15-i] = byte(id >> (8 * i))
		sid[7-i] = byte(id >> (8 * i))
	}
	tid[0] = 1
	sp.SetTraceID(tid)
	sp.SetSpanID(sid)
	if parent {
		psid := sid
		psid[0] = 0xc1 // the client's span: another id in the same trace
		sp.SetParentSpanID(psid)
	}
	sp.SetName("tools/call " + c.Request.Params.Name)
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	if c.DurationMs != nil {
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(*c.DurationMs) * time.Millisecond)))
	}
	a := sp.Attributes()
	a.PutStr("mcp.method.name", c.Request.Method)
	a.PutStr("gen_ai.tool.name", c.Request.Params.Name)
	reqID := string(c.Request.ID)
	if s, err := strconv.Unquote(reqID); err == nil {
		reqID = s
	}
	a.PutStr("jsonrpc.request.id", reqID)
	if c.SessionID != "" {
		a.PutStr("mcp.session.id", c.SessionID)
	}
	if c.ProtocolVersion != "" {
		a.PutStr("mcp.protocol.version", c.ProtocolVersion)
	}
	if len(c.Request.Params.Arguments) > 0 {
		a.PutStr("gen_ai.tool.call.arguments", string(c.Request.Params.Arguments))
	}
	ra.PutStr("service.name", c.Server)
	sp.SetKind(ptrace.SpanKindServer)
	switch {
	case c.Response == nil:
		a.PutStr("error.type", cmpOr(c.Error, "timeout"))
		sp.Status().SetCode(ptrace.StatusCodeError)
	case c.Response.Error != nil:
		code := strconv.FormatInt(c.Response.Error.Code, 10)
		a.PutStr("error.type", code)
		a.PutStr("rpc.response.status_code", code)
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage(c.Response.Error.Message)
	default:
		a.PutStr("gen_ai.tool.call.result", string(c.Response.Result))
		if bytes.Contains(c.Response.Result, []byte(`"isError":true`)) {
			a.PutStr("error.type", "tool_error")
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
	}
	return true, nil
}

func cmpOr(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
