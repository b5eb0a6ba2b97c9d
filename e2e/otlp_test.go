package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/mcplens/mcplens/binproc"
)

// Every ingest these tests start gets a free OTLP/gRPC port unless a test
// names one: the default, 127.0.0.1:4317, would clash between the ingest
// processes that run at the same time.
func init() { os.Setenv("MCPLENS_INGEST_GRPC_LISTEN", "127.0.0.1:0") }

// captureLine is the part of a capture line that tracesFromCaptures maps.
type captureLine struct {
	Time            string `json:"time"`
	DurationMs      *int64 `json:"duration_ms"`
	Tenant          string `json:"tenant"`
	Server          string `json:"server"`
	SessionID       string `json:"session_id"`
	Client          string `json:"client"`
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

// tracesFromCaptures writes each valid capture line as the span that a
// semconv-instrumented server exports for the same call: tenant and server
// as resource attributes, arguments and result as gen_ai.tool.call.*, a
// JSON-RPC error as error.type and rpc.response.status_code. A call that
// got no answer is the client's span with error.type "timeout". Lines that
// are not valid captures are left out.
func tracesFromCaptures(t *testing.T, ndjson []byte) ptrace.Traces {
	t.Helper()
	td := ptrace.NewTraces()
	sc := bufio.NewScanner(bytes.NewReader(ndjson))
	for n := 1; sc.Scan(); n++ {
		var c captureLine
		if json.Unmarshal(sc.Bytes(), &c) != nil || c.Time == "" {
			continue
		}
		start, err := time.Parse(time.RFC3339Nano, c.Time)
		if err != nil {
			t.Fatal(err)
		}
		rs := td.ResourceSpans().AppendEmpty()
		ra := rs.Resource().Attributes()
		ra.PutStr("mcplens.tenant", c.Tenant)
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{15: byte(n)})
		sp.SetSpanID(pcommon.SpanID{7: byte(n)})
		sp.SetName(c.Request.Method + " " + c.Request.Params.Name)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		if c.DurationMs != nil {
			sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(*c.DurationMs) * time.Millisecond)))
		}
		a := sp.Attributes()
		a.PutStr("mcp.method.name", c.Request.Method)
		a.PutStr("gen_ai.tool.name", c.Request.Params.Name)
		id := string(c.Request.ID)
		if s, err := strconv.Unquote(id); err == nil {
			id = s
		}
		a.PutStr("jsonrpc.request.id", id)
		if c.SessionID != "" {
			a.PutStr("mcp.session.id", c.SessionID)
		}
		if c.ProtocolVersion != "" {
			a.PutStr("mcp.protocol.version", c.ProtocolVersion)
		}
		if len(c.Request.Params.Arguments) > 0 {
			a.PutStr("gen_ai.tool.call.arguments", string(c.Request.Params.Arguments))
		}
		switch {
		case c.Response == nil:
			sp.SetKind(ptrace.SpanKindClient)
			ra.PutStr("service.name", "agent")
			a.PutStr("server.address", c.Server)
			a.PutStr("error.type", c.Error)
		case c.Response.Error != nil:
			sp.SetKind(ptrace.SpanKindServer)
			ra.PutStr("service.name", c.Server)
			code := strconv.FormatInt(c.Response.Error.Code, 10)
			a.PutStr("error.type", code)
			a.PutStr("rpc.response.status_code", code)
			sp.Status().SetCode(ptrace.StatusCodeError)
			sp.Status().SetMessage(c.Response.Error.Message)
		default:
			sp.SetKind(ptrace.SpanKindServer)
			ra.PutStr("service.name", c.Server)
			a.PutStr("gen_ai.tool.call.result", string(c.Response.Result))
			if bytes.Contains(c.Response.Result, []byte(`"isError":true`)) {
				a.PutStr("error.type", "tool_error")
				sp.Status().SetCode(ptrace.StatusCodeError)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return td
}

func postOTLP(t *testing.T, addr string, body []byte, contentType string, gz bool) (int, []byte) {
	t.Helper()
	if gz {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(body)
		w.Close()
		body = b.Bytes()
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/traces", bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// The answers of the capture path for e2e/testdata/calls.ndjson (see
// TestCapturePathEndToEnd).
const (
	wantCaptureRates = `[{"calls":2,"category":"INVALID_ARGUMENT","code":-32602,"failures":1,"rate":0.5,"tool":"get_forecast"},` +
		`{"calls":1,"category":"UNAUTHENTICATED","code":0,"failures":1,"rate":1,"tool":"lookup_customer"},` +
		`{"calls":5,"category":"UNAVAILABLE","code":0,"failures":3,"rate":0.6,"tool":"search_docs"}]`
	wantCaptureEmpty = `[{"arg_key":"department","arg_value":"finace","calls":1,"empty":1,"rate":1,"tool":"search_docs"},` +
		`{"arg_key":"department","arg_value":"finance","calls":1,"empty":0,"rate":0,"tool":"search_docs"}]`
)

// TestOTLPPathEndToEnd posts the spans equivalent to the NDJSON captures
// as OTLP/HTTP JSON, OTLP/HTTP protobuf (gzip) and OTLP/gRPC, each to its
// own database, and checks that the API answers as it does for the
// captures; then it posts the spans where the captures already are and
// checks that no call counts twice.
func TestOTLPPathEndToEnd(t *testing.T) {
	ndjson, err := os.ReadFile("testdata/calls.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	req := ptraceotlp.NewExportRequestFromTraces(tracesFromCaptures(t, ndjson))
	jsonBody, err := req.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	protoBody, err := req.MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	stack := func(t *testing.T, name string, extra ...string) (ingest, api *proc) {
		db := "e2e_otlp_" + name
		ch := []string{"-clickhouse-addr", server.Addr, "-clickhouse-database", db}
		ingest = start(t, "ingest", append(append(ch, "-flush-every", "100ms", "-otlp-pair-window", "200ms"), extra...)...)
		return ingest, start(t, "api", ch...)
	}
	answers := func(t *testing.T, api *proc) {
		t.Helper()
		waitRows(t, api.Addr, "/api/v1/failure-rates?"+window, wantCaptureRates)
		waitRows(t, api.Addr, "/api/v1/empty-results?arg_key=department&"+window, wantCaptureEmpty)
	}

	t.Run("json", func(t *testing.T) {
		ingest, api := stack(t, "json")
		status, body := postOTLP(t, ingest.Addr, jsonBody, "application/json", false)
		if status != http.StatusOK || string(body) != `{"partialSuccess":{}}` {
			t.Fatalf("POST: %d %s", status, body)
		}
		answers(t, api)
	})
	t.Run("protobuf", func(t *testing.T) {
		ingest, api := stack(t, "protobuf")
		status, body := postOTLP(t, ingest.Addr, protoBody, "application/x-protobuf", true)
		resp := ptraceotlp.NewExportResponse()
		if status != http.StatusOK || resp.UnmarshalProto(body) != nil || resp.PartialSuccess().RejectedSpans() != 0 {
			t.Fatalf("POST: %d %q", status, body)
		}
		answers(t, api)
	})
	t.Run("grpc", func(t *testing.T) {
		grpcAddr := binproc.FreeAddr(t)
		_, api := stack(t, "grpc", "-grpc-listen", grpcAddr)
		cc, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		resp, err := ptraceotlp.NewGRPCClient(cc).Export(t.Context(), req, grpc.UseCompressor("gzip"))
		if err != nil || resp.PartialSuccess().RejectedSpans() != 0 {
			t.Fatalf("export: %v", err)
		}
		answers(t, api)
	})
	t.Run("captures and spans of the same calls count once", func(t *testing.T) {
		ingest, api := stack(t, "dedupe")
		if status, res := post(t, ingest.Addr, ndjson, false); status != http.StatusOK || res["accepted"] != 8.0 {
			t.Fatalf("POST captures: %d %v", status, res)
		}
		answers(t, api)
		if status, body := postOTLP(t, ingest.Addr, jsonBody, "application/json", false); status != http.StatusOK {
			t.Fatalf("POST spans: %d %s", status, body)
		}
		time.Sleep(time.Second) // the spans are flushed by now; the answers must not move
		answers(t, api)
	})
	t.Run("SIGTERM stores spans still waiting for their other side", func(t *testing.T) {
		ingest, api := stack(t, "sigterm", "-otlp-pair-window", "1h")
		late := ptrace.NewTraces()
		rs := late.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "agent")
		rs.Resource().Attributes().PutStr("mcplens.tenant", "acme")
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetName("tools/call lookup_customer")
		sp.SetKind(ptrace.SpanKindClient)
		sp.SetTraceID(pcommon.TraceID{1: 1})
		sp.SetSpanID(pcommon.SpanID{1: 1})
		at := time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(30 * time.Millisecond)))
		sp.Attributes().PutStr("mcp.method.name", "tools/call")
		sp.Attributes().PutStr("server.address", "crm")
		sp.Attributes().PutStr("error.type", "tool_error")
		sp.Attributes().PutStr("gen_ai.tool.call.result", `{"content":[{"type":"text","text":"令牌过期，请重新登录"}],"isError":true}`)
		body, err := ptraceotlp.NewExportRequestFromTraces(late).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if status, res := postOTLP(t, ingest.Addr, body, "application/json", false); status != http.StatusOK {
			t.Fatalf("POST: %d %s", status, res)
		}
		if err := ingest.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := ingest.Cmd.Wait(); err != nil {
			t.Fatalf("ingest exit after SIGTERM: %v\n%s", err, ingest.Log)
		}
		waitRows(t, api.Addr, "/api/v1/failure-rates?tool=lookup_customer&"+window,
			`[{"calls":1,"category":"UNAUTHENTICATED","code":0,"failures":1,"rate":1,"tool":"lookup_customer"}]`)
	})
}
