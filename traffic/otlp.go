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

// captureLine is the part of a capture line that AppendServerSpan and
// AppendClientSpan map.
type captureLine struct {
	Time            string `json:"time"`
	DurationMs      *int64 `json:"duration_ms"`
	Tenant          string `json:"tenant"`
	Server          string `json:"server"`
	Client          string `json:"client"`
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
// span that ingest only stores. AppendClientSpan adds the client's side,
// which ingest merges with this one into one row. It reports false for a
// line that is not a
// tools/call. The span and trace ids are derived from id: give each span
// its own.
func AppendServerSpan(td ptrace.Traces, line []byte, id uint64, parent bool) (bool, error) {
	c, sp, ra, ok, err := appendCallSpan(td, line, id)
	if !ok {
		return false, err
	}
	if parent {
		sp.SetParentSpanID(clientSpanID(sp.SpanID()))
	}
	ra.PutStr("service.name", c.Server)
	sp.SetKind(ptrace.SpanKindServer)
	a := sp.Attributes()
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

// AppendClientSpan adds to td the span that a semconv-instrumented client
// exports for the call of one capture line: the parent of the span
// AppendServerSpan(td, line, id, true) adds (same trace, and the span id
// that one names as its parent), of kind CLIENT, starting 1 ms before the
// server's span and ending 1 ms after it, with the line's client
// as service.name, the server as server.address, the tool, request id,
// session and arguments, and the failure the caller saw as error.type (a
// JSON-RPC code, tool_error, or the local error of a call left without an
// answer); no result, as client instrumentations record the outcome and
// not the content. It reports false for a line that is not a tools/call.
func AppendClientSpan(td ptrace.Traces, line []byte, id uint64) (bool, error) {
	c, sp, ra, ok, err := appendCallSpan(td, line, id)
	if !ok {
		return false, err
	}
	sp.SetSpanID(clientSpanID(sp.SpanID()))
	// The client's span starts before the server's and ends after it, by
	// the round trip (1 ms each way here): no timestamp is shared by the
	// two sides.
	sp.SetStartTimestamp(sp.StartTimestamp() - pcommon.Timestamp(time.Millisecond))
	if c.DurationMs != nil {
		sp.SetEndTimestamp(sp.EndTimestamp() + pcommon.Timestamp(time.Millisecond))
	}
	ra.PutStr("service.name", cmpOr(c.Client, "mcp-client"))
	sp.SetKind(ptrace.SpanKindClient)
	a := sp.Attributes()
	a.PutStr("server.address", c.Server)
	switch {
	case c.Response == nil:
		a.PutStr("error.type", cmpOr(c.Error, "timeout"))
		sp.Status().SetCode(ptrace.StatusCodeError)
	case c.Response.Error != nil:
		a.PutStr("error.type", strconv.FormatInt(c.Response.Error.Code, 10))
		sp.Status().SetCode(ptrace.StatusCodeError)
	case bytes.Contains(c.Response.Result, []byte(`"isError":true`)):
		a.PutStr("error.type", "tool_error")
		sp.Status().SetCode(ptrace.StatusCodeError)
	}
	return true, nil
}

// appendCallSpan adds to td, in a resource of its own carrying the
// line's tenant, the span both sides share for the call of line: trace and
// span ids derived from id, name, start and end, method, tool, request id,
// session, protocol version and arguments. ok is false for a line that is
// not a tools/call (err says why when the line is not a capture line).
func appendCallSpan(td ptrace.Traces, line []byte, id uint64) (c captureLine, sp ptrace.Span, ra pcommon.Map, ok bool, err error) {
	if err := json.Unmarshal(line, &c); err != nil {
		return c, sp, ra, false, fmt.Errorf("capture line: %w", err)
	}
	if c.Request.Method != "tools/call" {
		return c, sp, ra, false, nil
	}
	start, err := time.Parse(time.RFC3339Nano, c.Time)
	if err != nil {
		return c, sp, ra, false, fmt.Errorf("capture line time: %w", err)
	}
	rs := td.ResourceSpans().AppendEmpty()
	ra = rs.Resource().Attributes()
	ra.PutStr("mcplens.tenant", c.Tenant)
	sp = rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	for i := range 8 {
		tid[15-i] = byte(id >> (8 * i))
		sid[7-i] = byte(id >> (8 * i))
	}
	tid[0] = 1
	sp.SetTraceID(tid)
	sp.SetSpanID(sid)
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
	return c, sp, ra, true, nil
}

// clientSpanID is the span id of the client's side of the call whose
// server span has id sid: another id in the same trace.
func clientSpanID(sid pcommon.SpanID) pcommon.SpanID {
	sid[0] = 0xc1
	return sid
}

func cmpOr(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
