package pipeline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcplens/mcplens/pipeline/classify"
)

// The -update flag rewrites golden files. It is registered only if no other
// test file of the package has registered it already.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files in testdata/")
	}
}

func updateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// testNow is the ingest time used by the tests: 2026-11-30T00:00:00Z.
func testNow() time.Time { return time.UnixMilli(1780000000000).UTC() }

func testOptions() *DecodeOptions { return &DecodeOptions{Now: testNow} }

// inputView is classify.Input with its raw JSON fields shown as JSON.
type inputView struct {
	classify.Input
	ErrorData  json.RawMessage `json:",omitempty"`
	Structured json.RawMessage `json:",omitempty"`
	ResultMeta json.RawMessage `json:",omitempty"`
}

func viewInput(in classify.Input) inputView {
	return inputView{Input: in, ErrorData: in.ErrorData, Structured: in.Structured, ResultMeta: in.ResultMeta}
}

// decodeView is what a decode test compares: the Call, the Input, or the error.
type decodeView struct {
	Call  *Call      `json:",omitempty"`
	Input *inputView `json:",omitempty"`
	Error string     `json:",omitempty"`
}

func decodeToView(line []byte, opts *DecodeOptions) decodeView {
	c, in, err := DecodeCapture(line, opts)
	if err != nil {
		return decodeView{Error: err.Error()}
	}
	iv := viewInput(in)
	return decodeView{Call: &c, Input: &iv}
}

// subset reports the first difference where want (decoded JSON) is not a
// subset of got: objects compare key by key, everything else exactly.
func subset(path string, want, got any) string {
	if wm, ok := want.(map[string]any); ok {
		gm, ok := got.(map[string]any)
		if !ok {
			return path + ": got " + mustJSON(got) + ", want an object"
		}
		keys := make([]string, 0, len(wm))
		for k := range wm {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			g, ok := gm[k]
			if !ok {
				return path + "." + k + ": missing"
			}
			if d := subset(path+"."+k, wm[k], g); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(want, got) {
		return path + ": got " + mustJSON(got) + ", want " + mustJSON(want)
	}
	return ""
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestDecodeCapture(t *testing.T) {
	tests := []struct {
		name string
		line string
		want string // JSON: the fields of decodeView that must match
	}{
		{
			"seed article: misspelled department, empty text result, isError false",
			`{"time":"2026-11-29T10:00:00.123Z","duration_ms":120,"tenant":"acme","server":"kb","session_id":"s-1","client":"claude-desktop","protocol_version":"2025-06-18","request":{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_docs","arguments":{"department":"finace","q":"差旅报销上限"}}},"response":{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"未找到匹配文档"}],"isError":false}}}`,
			`{"Call":{"Time":"2026-11-29T10:00:00.123Z","TimeMs":1795946400123,"DurationMs":120,"Tenant":"acme","Server":"kb","Tool":"search_docs",
			  "SessionID":"s-1","SessionKey":"s-1","RequestID":"7","Client":"claude-desktop","ProtocolVersion":"2025-06-18","Source":"capture","Side":"",
			  "ArgsJSON":"{\"department\":\"finace\",\"q\":\"差旅报销上限\"}","ArgKeys":["department","q"],"ArgValues":["finace","差旅报销上限"],
			  "HasResponse":1,"IsError":0,"RPCError":0,"RPCCode":0,"RPCMessage":"","ResultType":"complete","ContentBlocks":1,"TextBytes":21,
			  "HasStructured":0,"Message":"未找到匹配文档","Continuation":0,"IngestedMs":1780000000000,"Category":"","ClassRule":""},
			 "Input":{"Server":"kb","Tool":"search_docs","ProtocolVersion":"2025-06-18","HasResponse":true,"IsError":0,"RPCError":false,
			  "ResultType":"complete","ContentBlocks":1,"Texts":["未找到匹配文档"],"LocalError":""}}`,
		},
		{
			"2024-11-05: string id, no isError, image and embedded resource blocks",
			`{"time":"2026-11-29T08:00:00Z","server":"files","protocol_version":"2024-11-05","request":{"jsonrpc":"2.0","id":"a1","method":"tools/call","params":{"name":"read_image","arguments":{"path":"/x.png"}}},"response":{"jsonrpc":"2.0","id":"a1","result":{"content":[{"type":"image","data":"iVBO","mimeType":"image/png"},{"type":"text","text":"one page"},{"type":"resource","resource":{"uri":"file:///x.txt","text":"INVOICE"}}]}}}`,
			`{"Call":{"RequestID":"a1","Tenant":"default","IsError":-1,"ResultType":"complete","ContentBlocks":3,"TextBytes":8,"Message":"one page","DurationMs":-1},
			 "Input":{"IsError":-1,"Texts":["one page"],"ContentBlocks":3}}`,
		},
		{
			"2025-03-26: audio block, numeric id 0, \\u-escaped text as Python sends it",
			`{"time":"2026-11-29T08:05:00.5Z","server":"voice","protocol_version":"2025-03-26","request":{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"transcribe","arguments":{"lang":"zh-CN"}}},"response":{"jsonrpc":"2.0","id":0,"result":{"content":[{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"},{"text":"\u4f1a\u8bae","type":"text"}],"isError":false}}}`,
			`{"Call":{"RequestID":"0","TimeMs":1795939500500,"ContentBlocks":2,"TextBytes":6,"Message":"会议","IsError":0},"Input":{"Texts":["会议"]}}`,
		},
		{
			"2025-06-18: structuredContent object and resource_link",
			`{"time":"2026-11-29T08:00:00Z","server":"kb","request":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}},"response":{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"resource_link","uri":"https://x/1","name":"1"}],"structuredContent":{"hits":0}}}}`,
			`{"Call":{"HasStructured":1,"ContentBlocks":1,"TextBytes":0,"Message":"","ArgsJSON":"{}","ArgKeys":[],"ArgValues":[]},"Input":{"Structured":{"hits":0},"Texts":null}}`,
		},
		{
			"2025-11-25: CreateTaskResult reads as result type task",
			`{"time":"2026-11-29T09:20:00Z","server":"etl","protocol_version":"2025-11-25","request":{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"rebuild","task":{"ttl":60000}}},"response":{"jsonrpc":"2.0","id":77,"result":{"task":{"taskId":"t-1","status":"working"}}}}`,
			`{"Call":{"ResultType":"task","ContentBlocks":-1,"HasResponse":1},"Input":{"ResultType":"task","ContentBlocks":-1}}`,
		},
		{
			"2026-07-28: sessionless; version, client and trace id from params._meta",
			`{"time":"2026-11-29T15:30:12.345Z","server":"weather","request":{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"ExampleClient","version":"1.0.0"},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},"name":"get_weather","arguments":{"location":"New York"}}},"response":{"jsonrpc":"2.0","id":"c","result":{"resultType":"complete","content":[],"structuredContent":"sunny","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"weather"}}}}}`,
			`{"Call":{"SessionID":"","SessionKey":"0af7651916cd43dd8448eb211c80319c","TraceID":"0af7651916cd43dd8448eb211c80319c","ProtocolVersion":"2026-07-28","Client":"ExampleClient",
			  "ResultType":"complete","ContentBlocks":0,"HasStructured":1},
			 "Input":{"ProtocolVersion":"2026-07-28","Structured":"sunny","ResultMeta":{"io.modelcontextprotocol/serverInfo":{"name":"weather"}}}}`,
		},
		{
			"top-level protocol_version, client and trace_id win over _meta",
			`{"time":"2026-11-29T15:30:12Z","client":"top","protocol_version":"2025-11-25","trace_id":"t-top","request":{"id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"meta"},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},"name":"t"}}}`,
			`{"Call":{"ProtocolVersion":"2025-11-25","Client":"top","TraceID":"t-top","SessionKey":"t-top"}}`,
		},
		{
			"2026-07-28: structuredContent null counts as present",
			`{"time":"2026-11-29T15:30:12Z","request":{"id":1,"method":"tools/call","params":{"name":"t"}},"response":{"result":{"resultType":"complete","content":[],"structuredContent":null}}}`,
			`{"Call":{"HasStructured":1},"Input":{"Structured":null}}`,
		},
		{
			"2026-07-28: input_required result",
			`{"time":"2026-11-29T15:31:00Z","server":"github","request":{"jsonrpc":"2.0","id":"r-1","method":"tools/call","params":{"name":"create_issue","arguments":{"repo":"g/s"}}},"response":{"jsonrpc":"2.0","id":"r-1","result":{"resultType":"input_required","inputRequests":{"login":{"method":"elicitation/create","params":{"message":"name?"}}},"requestState":"eyJ4IjoxfQ"}}}`,
			`{"Call":{"ResultType":"input_required","ContentBlocks":-1,"IsError":-1,"Continuation":0,"Message":""},"Input":{"ResultType":"input_required","ContentBlocks":-1}}`,
		},
		{
			"2026-07-28: a follow-up with inputResponses and requestState is a continuation",
			`{"time":"2026-11-29T15:31:09Z","server":"github","request":{"jsonrpc":"2.0","id":"r-2","method":"tools/call","params":{"name":"create_issue","arguments":{"repo":"g/s"},"inputResponses":{"login":{"action":"accept","content":{"name":"octo"}}},"requestState":"eyJ4IjoxfQ"}},"response":{"jsonrpc":"2.0","id":"r-2","result":{"resultType":"complete","content":[{"type":"text","text":"Created issue #88"}]}}}`,
			`{"Call":{"Continuation":1,"ResultType":"complete","Message":"Created issue #88"}}`,
		},
		{
			"requestState alone is a continuation",
			`{"time":"2026-11-29T15:31:09Z","request":{"id":2,"method":"tools/call","params":{"name":"t","requestState":"abc"}}}`,
			`{"Call":{"Continuation":1}}`,
		},
		{
			"null inputResponses is not a continuation",
			`{"time":"2026-11-29T15:31:09Z","request":{"id":2,"method":"tools/call","params":{"name":"t","inputResponses":null}}}`,
			`{"Call":{"Continuation":0}}`,
		},
		{
			"unknown resultType is kept as sent",
			`{"time":"2026-11-29T15:31:09Z","request":{"id":2,"method":"tools/call","params":{"name":"t"}},"response":{"result":{"resultType":"streaming","content":[]}}}`,
			`{"Call":{"ResultType":"streaming"}}`,
		},
		{
			"JSON-RPC error -32602 with data",
			`{"time":"2026-11-29T14:05:31.018Z","server":"kb","request":{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"search_docs","arguments":{"department":"Finance Dept"}}},"response":{"jsonrpc":"2.0","id":12,"error":{"code":-32602,"message":"Invalid arguments for tool search_docs: department must be one of [finance, hr, legal]","data":{"field":"department"}}}}`,
			`{"Call":{"HasResponse":1,"RPCError":1,"RPCCode":-32602,"RPCMessage":"Invalid arguments for tool search_docs: department must be one of [finance, hr, legal]",
			  "Message":"Invalid arguments for tool search_docs: department must be one of [finance, hr, legal]","ResultType":"","ContentBlocks":-1,"IsError":-1},
			 "Input":{"RPCError":true,"RPCCode":-32602,"RPCMessage":"Invalid arguments for tool search_docs: department must be one of [finance, hr, legal]","ErrorData":{"field":"department"},"ResultType":"","ContentBlocks":-1}}`,
		},
		{
			"JSON-RPC error with code 0 (go-sdk) is still an RPC error",
			`{"time":"2026-11-29T09:12:40Z","request":{"id":5,"method":"tools/call","params":{"name":"monthly_report"}},"response":{"id":5,"error":{"code":0,"message":"validating tool output: missing total"}}}`,
			`{"Call":{"RPCError":1,"RPCCode":0,"RPCMessage":"validating tool output: missing total"},"Input":{"RPCError":true,"RPCCode":0}}`,
		},
		{
			"error response without id (2025-11-25) and a string code",
			`{"time":"2026-11-29T09:12:40Z","request":{"id":5,"method":"tools/call","params":{"name":"t"}},"response":{"jsonrpc":"2.0","error":{"code":"-32603","message":"boom"}}}`,
			`{"Call":{"RPCError":1,"RPCCode":-32603}}`,
		},
		{
			"integral float error code",
			`{"time":"2026-11-29T09:12:40Z","request":{"id":5,"method":"tools/call","params":{"name":"t"}},"response":{"error":{"code":-3.2602e4,"message":"bad"}}}`,
			`{"Call":{"RPCCode":-32602}}`,
		},
		{
			"missing response: no answer",
			`{"time":"2026-11-29T11:15:25.540Z","duration_ms":60000,"request":{"jsonrpc":"2.0","id":"req-34","method":"tools/call","params":{"name":"search_docs","arguments":{"q":"x"}}}}`,
			`{"Call":{"HasResponse":0,"IsError":-1,"ContentBlocks":-1,"ResultType":"","Message":"","DurationMs":60000},"Input":{"HasResponse":false,"ContentBlocks":-1,"LocalError":""}}`,
		},
		{
			"null response is a missing response; local error goes to LocalError and Message",
			`{"time":"2026-11-29T11:15:25.540Z","request":{"id":4,"method":"tools/call","params":{"name":"t"}},"response":null,"error":"timeout"}`,
			`{"Call":{"HasResponse":0,"Message":"timeout"},"Input":{"HasResponse":false,"LocalError":"timeout"}}`,
		},
		{
			"isError true as a string (mcp-go style)",
			`{"time":"2026-11-29T09:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":"t"}},"response":{"result":{"content":[{"type":"text","text":"boom"}],"isError":"true"}}}`,
			`{"Call":{"IsError":1}}`,
		},
		{
			"isError of another type reads as absent",
			`{"time":"2026-11-29T09:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":"t"}},"response":{"result":{"content":[],"isError":1}}}`,
			`{"Call":{"IsError":-1}}`,
		},
		{
			"content that is not an array is unknown",
			`{"time":"2026-11-29T09:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":"t"}},"response":{"result":{"content":"oops"}}}`,
			`{"Call":{"ContentBlocks":-1,"ResultType":"complete"}}`,
		},
		{
			"text blocks: bytes of all counted, the first 4 KiB kept",
			`{"time":"2026-11-29T09:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":"t"}},"response":{"result":{"content":[{"type":"text","text":"` + strings.Repeat("a", 4000) + `"},{"type":"text","text":"` + strings.Repeat("é", 100) + `"},{"type":"text","text":"dropped"},7]}}}`,
			`{"Call":{"ContentBlocks":4,"TextBytes":4207},"Input":{"Texts":["` + strings.Repeat("a", 4000) + `","` + strings.Repeat("é", 48) + `"]}}`,
		},
		{
			"numeric ids keep their literal",
			`{"time":"2026-11-29T09:00:00Z","request":{"id":1e3,"method":"tools/call","params":{"name":"t"}}}`,
			`{"Call":{"RequestID":"1e3"}}`,
		},
		{
			"negative and fractional ids keep their literal",
			`{"time":"2026-11-29T09:00:00Z","request":{"id":-7.50,"method":"tools/call","params":{"name":"t"}}}`,
			`{"Call":{"RequestID":"-7.50"}}`,
		},
		{
			"string ids with escapes are decoded",
			`{"time":"2026-11-29T09:00:00Z","request":{"id":"a\"b\u00e9","method":"tools/call","params":{"name":"t"}}}`,
			`{"Call":{"RequestID":"a\"bé"}}`,
		},
		{
			"no session or trace: the session key derives from the call id",
			`{"time":"2026-11-29T09:00:00Z","tenant":"t1","server":"s1","request":{"id":1,"method":"tools/call","params":{"name":"t"}}}`,
			`{"Call":{"SessionKey":"call:7514bbace6926f40"}}`,
		},
		{
			"time with an offset is stored in UTC; sub-millisecond digits are dropped",
			`{"time":"2026-11-29T13:20:00.123456+08:00","request":{"id":1,"method":"tools/call","params":{"name":"t"}}}`,
			`{"Call":{"Time":"2026-11-29T05:20:00.123Z","TimeMs":1795929600123}}`,
		},
		{
			"fractional duration is rounded",
			`{"time":"2026-11-29T09:00:00Z","duration_ms":12.6,"request":{"id":1,"method":"tools/call","params":{"name":"t"}}}`,
			`{"Call":{"DurationMs":13}}`,
		},
		{
			"null and empty optional strings take the defaults",
			`{"time":"2026-11-29T09:00:00Z","tenant":"","server":null,"session_id":null,"duration_ms":null,"request":{"id":1,"method":"tools/call","params":{"name":"t"}}}`,
			`{"Call":{"Tenant":"default","Server":"unknown","SessionID":"","DurationMs":-1}}`,
		},
		{
			"unknown fields are ignored at every level",
			`{"time":"2026-11-29T09:00:00Z","x":[1,{"y":null}],"request":{"id":1,"z":true,"method":"tools/call","params":{"name":"t","task":{"ttl":1}}},"response":{"w":"v","result":{"content":[],"extra":{}}}}`,
			`{"Call":{"Tool":"t","ContentBlocks":0}}`,
		},
		{
			"duplicate keys: the last one wins",
			`{"time":"2020-01-01T00:00:00Z","time":"2026-11-29T09:00:00Z","request":{"id":1,"method":"tools/list","method":"tools/call","params":{"name":"a","name":"b","arguments":{"x":1},"arguments":{"y":2}}}}`,
			`{"Call":{"TimeMs":1795942800000,"Tool":"b","ArgsJSON":"{\"y\":2}"}}`,
		},
		{
			"arguments: canonical, redacted, flattened",
			`{"time":"2026-11-29T09:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"z":1.50,"a":{"c":[1,{"password":"p"}],"b":true},"api_key":"k","n":null}}}}`,
			`{"Call":{"ArgsJSON":"{\"a\":{\"b\":true,\"c\":[1,{\"password\":\"[REDACTED]\"}]},\"api_key\":\"[REDACTED]\",\"n\":null,\"z\":1.5}",
			  "ArgKeys":["a.b","a.c","api_key","n","z"],"ArgValues":["true","[1,{\"password\":\"[REDACTED]\"}]","[REDACTED]","null","1.5"]}}`,
		},
		{
			"arguments that are not an object are kept and not exploded",
			`{"time":"2026-11-29T09:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":"t","arguments":[3,"x"]}}}`,
			`{"Call":{"ArgsJSON":"[3,\"x\"]","ArgKeys":[],"ArgValues":[]}}`,
		},
		{
			"null arguments read as {}",
			`{"time":"2026-11-29T09:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":"t","arguments":null}}}`,
			`{"Call":{"ArgsJSON":"{}","ArgKeys":[],"ArgValues":[]}}`,
		},
		{
			"invalid UTF-8 is replaced with U+FFFD",
			"{\"time\":\"2026-11-29T09:00:00Z\",\"request\":{\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\xff\",\"arguments\":{\"q\":\"a\xc3\"}}}}",
			`{"Call":{"Tool":"t\ufffd","ArgsJSON":"{\"q\":\"a\ufffd\"}","ArgValues":["a\ufffd"]}}`,
		},
		{
			"messages are scrubbed and cut to MaxMessageBytes",
			`{"time":"2026-11-29T09:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":"t"}},"response":{"result":{"isError":true,"content":[{"type":"text","text":"401: Authorization: Bearer abcdefghijklmnop failed ` + strings.Repeat("x", 600) + `"}]}}}`,
			`{"Call":{"Message":"401: Authorization: Bearer [REDACTED] failed ` + strings.Repeat("x", 512-len("401: Authorization: Bearer [REDACTED] failed ")-3) + `…"},
			  "Input":{"Texts":["401: Authorization: Bearer abcdefghijklmnop failed ` + strings.Repeat("x", 600) + `"]}}`,
		},
		{
			"trailing CRLF and leading whitespace are accepted",
			" \t{\"time\":\"2026-11-29T09:00:00Z\",\"request\":{\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}}\r\n",
			`{"Call":{"Tool":"t"}}`,
		},
		{
			"a byte order mark is ignored",
			"\xef\xbb\xbf{\"time\":\"2026-11-29T09:00:00Z\",\"request\":{\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}}",
			`{"Call":{"Tool":"t"}}`,
		},
		{
			"blank line is skipped",
			" \r\n",
			`{"Error":"not a tools/call"}`,
		},
		{
			"other methods are skipped",
			`{"time":"2026-11-29T09:25:00Z","request":{"jsonrpc":"2.0","id":78,"method":"tools/list","params":{}},"response":{"jsonrpc":"2.0","id":78,"result":{"tools":[]}}}`,
			`{"Error":"not a tools/call"}`,
		},
		{
			"notifications are skipped even without time",
			`{"request":{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}}`,
			`{"Error":"not a tools/call"}`,
		},
		{
			"a skipped line is skipped before its field errors",
			`{"time":"yesterday","tenant":5,"request":{"method":"tools/list","id":{}}}`,
			`{"Error":"not a tools/call"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want any
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatalf("bad want: %v", err)
			}
			var got any
			if err := json.Unmarshal([]byte(mustJSON(decodeToView([]byte(tt.line), testOptions()))), &got); err != nil {
				t.Fatal(err)
			}
			if d := subset("", want, got); d != "" {
				t.Errorf("%s\ngot %s", d, mustJSON(got))
			}
		})
	}
}

func TestDecodeCaptureSkipIsErrSkip(t *testing.T) {
	for _, line := range []string{
		"",
		"\n",
		`{"request":{"id":1,"method":"ping"}}`,
	} {
		if _, _, err := DecodeCapture([]byte(line), nil); err != ErrSkip {
			t.Errorf("DecodeCapture(%q) error = %v, want ErrSkip itself", line, err)
		}
	}
}

func TestDecodeCaptureRejects(t *testing.T) {
	const req = `"request":{"id":1,"method":"tools/call","params":{"name":"t"}}`
	tests := []struct {
		name    string
		line    string
		wantErr string
	}{
		{"missing time", `{` + req + `}`, `missing "time"`},
		{"null time", `{"time":null,` + req + `}`, `missing "time"`},
		{"time not RFC 3339", `{"time":"yesterday",` + req + `}`, `time: want RFC 3339, got "yesterday"`},
		{"time without zone", `{"time":"2026-11-29T10:00:00",` + req + `}`, `time: want RFC 3339, got "2026-11-29T10:00:00"`},
		{"time with a bad day", `{"time":"2026-02-30T10:00:00Z",` + req + `}`, `time: want RFC 3339, got "2026-02-30T10:00:00Z"`},
		{"time as a number", `{"time":1732874400,` + req + `}`, `time: want RFC 3339 string, got number`},
		{"time before 1970", `{"time":"1969-12-31T23:59:59Z",` + req + `}`, `time: "1969-12-31T23:59:59Z" is out of range (1970 to 2105)`},
		{"long bad time is cut", `{"time":"` + strings.Repeat("9", 100) + `",` + req + `}`, `time: want RFC 3339, got "` + strings.Repeat("9", 64) + `"…`},
		{"missing request", `{"time":"2026-11-29T10:00:00Z"}`, `missing "request"`},
		{"null request", `{"time":"2026-11-29T10:00:00Z","request":null}`, `missing "request"`},
		{"request not an object", `{"time":"2026-11-29T10:00:00Z","request":"tools/call"}`, `request: want object, got string`},
		{"missing method", `{"time":"2026-11-29T10:00:00Z","request":{"id":1}}`, `request.method: missing`},
		{"method not a string", `{"time":"2026-11-29T10:00:00Z","request":{"id":1,"method":7}}`, `request.method: want string, got number`},
		{"missing id", `{"time":"2026-11-29T10:00:00Z","request":{"method":"tools/call","params":{"name":"t"}}}`, `request.id: missing`},
		{"null id", `{"time":"2026-11-29T10:00:00Z","request":{"id":null,"method":"tools/call","params":{"name":"t"}}}`, `request.id: want string or number, got null`},
		{"object id", `{"time":"2026-11-29T10:00:00Z","request":{"id":{},"method":"tools/call","params":{"name":"t"}}}`, `request.id: want string or number, got object`},
		{"boolean id", `{"time":"2026-11-29T10:00:00Z","request":{"id":true,"method":"tools/call","params":{"name":"t"}}}`, `request.id: want string or number, got boolean`},
		{"missing params", `{"time":"2026-11-29T10:00:00Z","request":{"id":1,"method":"tools/call"}}`, `request.params: missing`},
		{"params not an object", `{"time":"2026-11-29T10:00:00Z","request":{"id":1,"method":"tools/call","params":[]}}`, `request.params: want object, got array`},
		{"missing name", `{"time":"2026-11-29T10:00:00Z","request":{"id":1,"method":"tools/call","params":{"arguments":{}}}}`, `request.params.name: missing`},
		{"empty name", `{"time":"2026-11-29T10:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":""}}}`, `request.params.name: empty`},
		{"name not a string", `{"time":"2026-11-29T10:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":42}}}`, `request.params.name: want string, got number`},
		{"tenant not a string", `{"time":"2026-11-29T10:00:00Z","tenant":5,` + req + `}`, `tenant: want string, got number`},
		{"server not a string", `{"time":"2026-11-29T10:00:00Z","server":["kb"],` + req + `}`, `server: want string, got array`},
		{"local error not a string", `{"time":"2026-11-29T10:00:00Z","error":{"code":1},` + req + `}`, `error: want string, got object`},
		{"negative duration", `{"time":"2026-11-29T10:00:00Z","duration_ms":-5,` + req + `}`, `duration_ms: want a non-negative number, got -5`},
		{"duration as a string", `{"time":"2026-11-29T10:00:00Z","duration_ms":"5",` + req + `}`, `duration_ms: want number, got string`},
		{"duration out of range", `{"time":"2026-11-29T10:00:00Z","duration_ms":1e300,` + req + `}`, `duration_ms: 1e300 is out of range`},
		{"response not an object", `{"time":"2026-11-29T10:00:00Z",` + req + `,"response":"ok"}`, `response: want object, got string`},
		{"response with neither result nor error", `{"time":"2026-11-29T10:00:00Z",` + req + `,"response":{"id":1}}`, `response: want "result" or "error"`},
		{"response with both", `{"time":"2026-11-29T10:00:00Z",` + req + `,"response":{"result":{},"error":{"code":1}}}`, `response: has both "result" and "error"`},
		{"result not an object", `{"time":"2026-11-29T10:00:00Z",` + req + `,"response":{"result":[]}}`, `response.result: want object, got array`},
		{"error not an object", `{"time":"2026-11-29T10:00:00Z",` + req + `,"response":{"error":"boom"}}`, `response.error: want object, got string`},
		{"first field error wins", `{"time":"x","tenant":1,` + req + `}`, `time: want RFC 3339, got "x"`},
		{"not an object", `[1,2]`, `want one JSON object per line, got array`},
		{"a bare string", `"hello"`, `want one JSON object per line, got string`},
		{"not JSON", `hello`, `invalid JSON at byte 1: unexpected 'h', want '{'`},
		{"truncated", `{"time":"2026-11-29T10:00:00Z","request":{`, `invalid JSON at byte 43: unexpected end of input, want a string key or '}'`},
		{"truncated string", `{"time":"2026-11-29T10:00`, `invalid JSON at byte 9: unterminated string`},
		{"missing colon", `{"time" "x"}`, `invalid JSON at byte 9: unexpected '"', want ':' after the key`},
		{"missing comma", `{"a":1 "b":2}`, `invalid JSON at byte 8: unexpected '"', want ',' or '}'`},
		{"trailing comma", `{"a":1,}`, `invalid JSON at byte 8: unexpected '}', want a string key`},
		{"trailing comma in array", `{"a":[1,]}`, `invalid JSON at byte 9: unexpected ']', want a value`},
		{"single quotes", `{'a':1}`, `invalid JSON at byte 2: unexpected ''', want a string key or '}'`},
		{"bad literal", `{"a":tru}`, `invalid JSON at byte 9: unexpected '}', want true`},
		{"bad number", `{"a":-}`, `invalid JSON at byte 7: unexpected '}', want a digit`},
		{"leading zero", `{"a":01}`, `invalid JSON at byte 7: unexpected '1', want ',' or '}'`},
		{"bad fraction", `{"a":1.}`, `invalid JSON at byte 8: unexpected '}', want a digit after '.'`},
		{"bad exponent", `{"a":1e}`, `invalid JSON at byte 8: unexpected '}', want a digit in the exponent`},
		{"bad escape", `{"a":"\q"}`, `invalid JSON at byte 7: invalid escape "\\q"`},
		{"bad unicode escape", `{"a":"\u12G4"}`, `invalid JSON at byte 7: invalid \u escape`},
		{"control character", "{\"a\":\"x\ty\"}", `invalid JSON at byte 8: control character in string`},
		{"binary garbage", "{\"a\":\x00}", `invalid JSON at byte 6: unexpected byte 0x00, want a value`},
		{"trailing data", `{"a":1} {"b":2}`, `invalid JSON at byte 9: unexpected '{', want end of line after the object`},
		{"syntax error beats the skip", `{"request":{"method":"tools/list"},}`, `invalid JSON at byte 36: unexpected '}', want a string key`},
		{"too deep", `{"time":"2026-11-29T10:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":"t","arguments":` + strings.Repeat(`{"a":`, 62) + `1` + strings.Repeat(`}`, 62) + `}}}`, `JSON nesting deeper than 64`},
		{"too deep in an ignored field", `{"x":` + strings.Repeat(`[`, 70) + strings.Repeat(`]`, 70) + `}`, `JSON nesting deeper than 64`},
		{"line too long", `{"time":"2026-11-29T10:00:00Z","pad":"` + strings.Repeat("x", 1<<20) + `"}`, `line exceeds 1048576 bytes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := DecodeCapture([]byte(tt.line), nil)
			if err == nil {
				t.Fatalf("DecodeCapture succeeded, want error %q", tt.wantErr)
			}
			if err.Error() != tt.wantErr {
				t.Errorf("error = %q, want %q", err.Error(), tt.wantErr)
			}
			if errors.Is(err, ErrSkip) {
				t.Errorf("error %q is ErrSkip", err)
			}
		})
	}
}

func TestDecodeCaptureOptions(t *testing.T) {
	line := []byte(`{"time":"2026-11-29T09:00:00Z","server":"vault","request":{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":{"b":{"c":1}},"long":"` + strings.Repeat("v", 100) + `","k1":1,"k2":2,"k3":3}}},"response":{"error":{"code":1,"message":"` + strings.Repeat("m", 100) + `"}}}`)
	red, err := NewRedactor(RedactConfig{HashOnlyServers: []string{"vault"}})
	if err != nil {
		t.Fatal(err)
	}
	opts := &DecodeOptions{
		DefaultTenant:   "t0",
		MaxDepth:        6,
		MaxArgs:         3,
		MaxValueBytes:   40,
		MaxMessageBytes: 20,
		Redactor:        red,
		Now:             testNow,
	}
	c, _, err := DecodeCapture(line, opts)
	if err != nil {
		t.Fatal(err)
	}
	if c.Tenant != "t0" {
		t.Errorf("Tenant = %q, want t0", c.Tenant)
	}
	if got, want := c.ArgKeys, []string{"a.b.c", "k1", "k2"}; !slices.Equal(got, want) {
		t.Errorf("ArgKeys = %q, want %q", got, want)
	}
	for _, v := range c.ArgValues {
		if !strings.HasPrefix(v, "sha256:") || len(v) != len("sha256:")+16 {
			t.Errorf("hash-only value %q, want sha256:<16 hex>", v)
		}
	}
	if len(c.Message) > 20 || !strings.HasSuffix(c.Message, "…") || len(c.RPCMessage) > 20 {
		t.Errorf("Message = %q, RPCMessage = %q; want at most 20 bytes ending in …", c.Message, c.RPCMessage)
	}
	if c.IngestedMs != testNow().UnixMilli() {
		t.Errorf("IngestedMs = %d, want %d", c.IngestedMs, testNow().UnixMilli())
	}

	deeper := []byte(`{"time":"2026-11-29T09:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":{"b":{"c":1}}}}}}`)
	if _, _, err := DecodeCapture(deeper, &DecodeOptions{MaxDepth: 5}); err == nil || err.Error() != "JSON nesting deeper than 5" {
		t.Errorf("MaxDepth 5: error = %v, want JSON nesting deeper than 5", err)
	}
	if _, _, err := DecodeCapture(line, &DecodeOptions{MaxLineBytes: 100}); err == nil || err.Error() != "line exceeds 100 bytes" {
		t.Errorf("MaxLineBytes 100: error = %v, want line exceeds 100 bytes", err)
	}

	// A secret that straddles the scrub window shrinks the text; the cut
	// must still land on a UTF-8 boundary and be marked.
	secretFirst := []byte(`{"time":"2026-11-29T09:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":"t"}},"response":{"result":{"content":[{"type":"text","text":"key=` + strings.Repeat("A1b2", 150) + ` ` + strings.Repeat("错误", 100) + `"}]}}}`)
	c, _, err = DecodeCapture(secretFirst, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.Message, "key=[REDACTED] 错误") || !strings.HasSuffix(c.Message, "…") ||
		!utf8.ValidString(c.Message) || len(c.Message) > defaultMaxMessage {
		t.Errorf("Message = %q, want the scrubbed, marked, valid start of the text", c.Message)
	}

	long := []byte(`{"time":"2026-11-29T09:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"long":"` + strings.Repeat("é", 50) + `"}}}}`)
	c, _, err = DecodeCapture(long, &DecodeOptions{MaxValueBytes: 40})
	if err != nil {
		t.Fatal(err)
	}
	v := c.ArgValues[0]
	if len(v) > 40 || !utf8.ValidString(v) || !strings.Contains(v, "…#") {
		t.Errorf("capped value %q (%d bytes), want at most 40 valid bytes with a …# marker", v, len(v))
	}
}

// TestDecodeCaptureDoesNotAliasLine checks that the decoded call survives the
// caller reusing its line buffer, as bufio.Scanner does.
func TestDecodeCaptureDoesNotAliasLine(t *testing.T) {
	line := []byte(`{"time":"2026-11-29T09:00:00Z","tenant":"acme","request":{"id":"r","method":"tools/call","params":{"name":"tool","arguments":{"k":"v"}}},"response":{"result":{"content":[{"type":"text","text":"hello"}],"structuredContent":{"a":1}}}}`)
	c, in, err := DecodeCapture(line, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := mustJSON(decodeView{Call: &c, Input: ptr(viewInput(in))})
	for i := range line {
		line[i] = 'X'
	}
	if after := mustJSON(decodeView{Call: &c, Input: ptr(viewInput(in))}); after != before {
		t.Errorf("decoded call changed with the line buffer:\nbefore %s\nafter  %s", before, after)
	}
}

func ptr[T any](v T) *T { return &v }

// TestDecodeCaptureConcurrent decodes the testdata lines from several
// goroutines at once; pooled buffers must never leak between calls.
func TestDecodeCaptureConcurrent(t *testing.T) {
	lines := readCaptureLines(t)
	want := make([]string, len(lines))
	for i, line := range lines {
		want[i] = mustJSON(decodeToView(line, testOptions()))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Go(func() {
			for n := range 50 {
				i := (g*7 + n) % len(lines)
				if got := mustJSON(decodeToView(lines[i], testOptions())); got != want[i] {
					errs <- fmt.Sprintf("line %d decoded concurrently:\n%s\nwant %s", i+1, got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestCallIDAndHashStable pins the hash functions: they key stored rows, so a
// change would split calls ingested before and after it.
func TestCallIDAndHashStable(t *testing.T) {
	line := []byte(`{"time":"2026-11-29T10:00:00.123Z","tenant":"acme","server":"kb","session_id":"s-1","request":{"id":7,"method":"tools/call","params":{"name":"search_docs","arguments":{"q":"差旅报销上限","department":"finace"}}}}`)
	c, _, err := DecodeCapture(line, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.CallID != 0x7addc6f1d73ddfe3 || c.ArgsHash != 0x7bdb830c55e12f7c {
		t.Errorf("CallID = %#x, ArgsHash = %#x; the stored identities changed", c.CallID, c.ArgsHash)
	}
	noArgs := []byte(`{"time":"2026-11-29T10:00:00.123Z","request":{"id":7,"method":"tools/call","params":{"name":"t"}}}`)
	if c, _, err = DecodeCapture(noArgs, nil); err != nil {
		t.Fatal(err)
	}
	if c.ArgsHash != 0x2e1472b57af294d1 { // xxHash64 of {}
		t.Errorf("ArgsHash of no arguments = %#x, want the hash of {}", c.ArgsHash)
	}
}

func TestDecodeCaptureGolden(t *testing.T) {
	lines := readCaptureLines(t)
	type entry struct {
		Line int
		decodeView
	}
	var got []entry
	for i, line := range lines {
		got = append(got, entry{Line: i + 1, decodeView: decodeToView(line, testOptions())})
	}
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	path := filepath.Join("testdata", "captures.golden.json")
	if updateGolden() {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; run go test ./pipeline -run TestDecodeCaptureGolden -update", err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("%s is stale; run `go test ./pipeline -run TestDecodeCaptureGolden -update` and review the diff", path)
	}
}

func readCaptureLines(tb testing.TB) [][]byte {
	tb.Helper()
	f, err := os.Open(filepath.Join("testdata", "captures.ndjson"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return lines
}

// FuzzDecodeCapture checks that no input panics, and that every decoded call
// keeps the invariants the writer and the queries rely on.
func FuzzDecodeCapture(f *testing.F) {
	for _, line := range readCaptureLines(f) {
		f.Add(line)
	}
	f.Add([]byte(`{"time":"2026-11-29T09:00:00Z","request":{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"b":[1,{"x":"\ud800"}],"a":1e400,"a":-0.0}}}}`))
	f.Add([]byte(`{"time":"2026-11-29T09:00:00Z","request":{"id":"\u0000","method":"tools/call","params":{"name":"\\","arguments":"x"}},"response":{"error":{"code":1e30}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		c, in, err := DecodeCapture(line, nil)
		if err != nil {
			if c.Tool != "" || in.Tool != "" {
				t.Fatalf("error %v with a non-empty result", err)
			}
			return
		}
		checkArgs(t, c.ArgsJSON, c.ArgsHash, c.ArgKeys, c.ArgValues, defaultMaxValue)
		if c.Tool == "" || c.SessionKey == "" || c.Tenant == "" || c.Server == "" { // "" is a valid request id
			t.Errorf("empty identity field: %+v", c)
		}
		if len(c.Message) > defaultMaxMessage || !utf8.ValidString(c.Message) {
			t.Errorf("Message %q: want at most %d bytes of valid UTF-8", c.Message, defaultMaxMessage)
		}
		n := 0
		for _, s := range in.Texts {
			n += len(s)
		}
		if n > classifierTextBytes {
			t.Errorf("Texts hold %d bytes, want at most %d", n, classifierTextBytes)
		}
		if c.HasResponse == 0 && (c.ContentBlocks != -1 || c.IsError != -1 || c.RPCError != 0) {
			t.Errorf("no response but ContentBlocks=%d IsError=%d RPCError=%d", c.ContentBlocks, c.IsError, c.RPCError)
		}
	})
}

// checkArgs checks the normalization invariants shared by both fuzz targets.
func checkArgs(t *testing.T, argsJSON string, hash uint64, keys, values []string, maxValue int) {
	t.Helper()
	if len(keys) != len(values) {
		t.Fatalf("%d keys, %d values", len(keys), len(values))
	}
	if !json.Valid([]byte(argsJSON)) || !utf8.ValidString(argsJSON) {
		t.Fatalf("ArgsJSON %q is not valid JSON", argsJSON)
	}
	if !slices.IsSorted(keys) {
		t.Errorf("keys %q are not sorted", keys)
	}
	for i := range keys {
		if len(keys[i]) > maxValue || len(values[i]) > maxValue || !utf8.ValidString(keys[i]) || !utf8.ValidString(values[i]) {
			t.Errorf("entry %q=%q exceeds %d bytes or is not UTF-8", keys[i], values[i], maxValue)
		}
	}
	if strings.Contains(argsJSON, `"[REDACTED]"`) {
		return
	}
	again, hash2, keys2, values2, err := NormalizeArgs([]byte(argsJSON), "", nil)
	if err != nil {
		t.Fatalf("re-normalizing %q: %v", argsJSON, err)
	}
	if again != argsJSON || hash2 != hash {
		t.Errorf("re-normalizing %q gives %q, hash %#x; want the same text and hash %#x", argsJSON, again, hash2, hash)
	}
	if !slices.Equal(keys, keys2) || !slices.Equal(values, values2) {
		t.Errorf("re-normalizing %q changes the entries: %q=%q, then %q=%q", argsJSON, keys, values, keys2, values2)
	}
}
