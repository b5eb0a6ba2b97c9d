package classify

import (
	"fmt"
	"strings"
	"testing"
)

const (
	unk = RetryUnknown
	no  = RetryNo
	yes = RetryYes
	mis = true // isError contradicts the category
	agr = false
)

// want is the expected verdict of one row. An empty rule is not checked;
// code and ms are checked always (the zero values mean "none").
type want struct {
	cat  Category
	src  string
	decl int8 // DeclaredRetryable
	exp  int8 // ExpectedRetryable
	mis  bool
	rule string
	code string // ErrorCode
	ms   int64  // RetryAfterMs
}

func summary(cat Category, src string, decl, exp int8, misflagged bool, rule, code string, ms int64) string {
	return fmt.Sprintf("%s source=%s declared=%d expected=%d misflagged=%t rule=%s code=%q retry_after_ms=%d",
		cat, src, decl, exp, misflagged, rule, code, ms)
}

var longDoc = strings.Repeat("差旅报销上限按职级执行。Travel policy: requests may time out; the timeout is 30s, "+
	"and the rate limit is 100 requests per minute (HTTP 429 when exceeded). ", 12)

// classifyTests are real-shaped outcomes from the SDK behaviours in
// reference/mcp-and-otel.md (§3.4, §3.5, §9), the seed article's stories
// and the requirements. Each row is named for the rule it pins.
var classifyTests = []struct {
	name string
	in   *Input
	want want
}{
	// --- The seed article's knowledge-base stories.
	{"seed: misspelled department finace, 未找到匹配文档, isError false is an empty result", okFalse("未找到匹配文档"), want{EmptyResult, SourceText, unk, no, agr, "text.empty.no_results.zh", "", 0}},
	{"seed: connection pool exhausted 连接池耗尽 with isError true is retryable UNAVAILABLE", toolErr("查询失败：数据库连接池耗尽"), want{Unavailable, SourceText, unk, yes, agr, "text.unavailable.pool.zh", "", 0}},
	{"success: search results that mention a timeout are not a hidden failure", ok("Found 3 issues in acme/mcp-gateway matching \"timeout\" (state: closed):\n#2426 Upstream timeout calling PSP after 30s  state: closed · labels: enhancement · comments: 12\n#2377 Flaky timeout in integration tests on CI  state: closed · labels: bug · comments: 4\n#2301 Raise the default timeout for exports  state: closed"), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"success: a document about connection pools is not a hidden failure", okFalse("# Database Connection Pool Sizing Guide\ndoc_id: D-2003 | department: engineering\nEach service instance gets a pool of at most 50 connections; the database accepts 500 in total. Symptoms of exhaustion: 'connection pool exhausted' errors and rising latency."), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"success: a Chinese document about login tokens is not a hidden failure", ok("# VPN 与多因素认证配置指南\n1. 从软件中心安装 VPN 客户端，服务器地址 vpn.corp.example。\n2. 首次登录需绑定多因素认证。\n3. 若提示令牌过期，请重新登录并重新绑定设备。\n4. 出差期间如无法连接，请联系 IT 服务台（分机 8000），并提供设备编号与错误截图。"), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"text: Postgres too many clients is connection exhaustion", toolErr("pq: sorry, too many clients already"), want{Unavailable, SourceText, unk, yes, agr, "text.unavailable.pool.en", "", 0}},
	{"jsonrpc: mcp-go -32603 with a Go runtime panic is INTERNAL, not an argument error", rpcErr(-32603, "internal error: runtime error: index out of range [1] with length 1"), want{Internal, SourceText, unk, yes, agr, "text.internal.crash", "", 0}},
	{"seed: expired token 令牌过期，请重新登录 is UNAUTHENTICATED, not retryable", toolErr("令牌过期，请重新登录"), want{Unauthenticated, SourceText, unk, no, agr, "text.unauthenticated.zh", "", 0}},
	{"seed: 部门不存在 on an isError result is INVALID_ARGUMENT", toolErr("部门不存在：finace"), want{InvalidArgument, SourceText, unk, no, agr, "text.invalid_argument.named_value.zh", "", 0}},
	{"seed: 不存在的部门 on a success is a misflagged INVALID_ARGUMENT", okFalse("不存在的部门 finace"), want{InvalidArgument, SourceText, unk, no, mis, "text.invalid_argument.named_value.zh", "", 0}},
	{"seed: -32602 invalid params is INVALID_ARGUMENT", rpcErr(-32602, "Invalid params: department must be one of finance, hr, legal"), want{InvalidArgument, SourceJSONRPC, unk, no, agr, "jsonrpc.invalid_params", "", 0}},
	{"seed: weather rate limit as isError text is RATE_LIMITED", toolErr("Weather API rate limit exceeded. Try again in 60 seconds."), want{RateLimited, SourceText, unk, yes, agr, "text.rate_limit.en", "", 0}},
	{"seed: structured EMPTY_RESULT marker on a success", okStruct(`{"category":"EMPTY_RESULT","results":[]}`, "没有找到匹配的制度文档"), want{EmptyResult, SourceExplicit, unk, no, agr, "explicit.empty_result", "EMPTY_RESULT", 0}},
	{"seed: structured RATE_LIMITED with retryable true", toolErrStruct("限流中，请稍后再试", `{"errorCode":"RATE_LIMITED","retryable":true}`), want{RateLimited, SourceExplicit, yes, yes, agr, "explicit.rate_limited", "RATE_LIMITED", 0}},
	{"seed: structured UNAUTHENTICATED with retryable false", toolErrStruct("需要重新登录", `{"errorCode":"UNAUTHENTICATED","retryable":false}`), want{Unauthenticated, SourceExplicit, no, no, agr, "explicit.unauthenticated", "UNAUTHENTICATED", 0}},
	{"seed: structured UPSTREAM_TIMEOUT with retryable true", toolErrStruct("上游超时", `{"errorCode":"UPSTREAM_TIMEOUT","retryable":true}`), want{UpstreamTimeout, SourceExplicit, yes, yes, agr, "explicit.upstream_timeout", "UPSTREAM_TIMEOUT", 0}},

	// --- Explicit codes in structuredContent.
	{"explicit: errorCode with retryAfterMs", toolErrStruct("Rate limited", `{"errorCode":"RATE_LIMITED","retryable":true,"retryAfterMs":1500}`), want{RateLimited, SourceExplicit, yes, yes, agr, "explicit.rate_limited", "RATE_LIMITED", 1500}},
	{"explicit: error_code in snake case and lower case", toolErrStruct("x", `{"error_code":"rate_limited"}`), want{RateLimited, SourceExplicit, unk, yes, agr, "explicit.rate_limited", "rate_limited", 0}},
	{"explicit: nested error.code", toolErrStruct("search failed", `{"error":{"code":"UPSTREAM_TIMEOUT","message":"search backend timed out"}}`), want{UpstreamTimeout, SourceExplicit, unk, yes, agr, "explicit.upstream_timeout", "UPSTREAM_TIMEOUT", 0}},
	{"explicit: gRPC RESOURCE_EXHAUSTED is RATE_LIMITED", toolErrStruct("x", `{"code":"RESOURCE_EXHAUSTED"}`), want{RateLimited, SourceExplicit, unk, yes, agr, "explicit.rate_limited", "RESOURCE_EXHAUSTED", 0}},
	{"explicit: gRPC DEADLINE_EXCEEDED is UPSTREAM_TIMEOUT", toolErrStruct("x", `{"code":"DEADLINE_EXCEEDED"}`), want{UpstreamTimeout, SourceExplicit, unk, yes, agr, "explicit.upstream_timeout", "DEADLINE_EXCEEDED", 0}},
	{"explicit: gRPC UNAVAILABLE", toolErrStruct("x", `{"code":"UNAVAILABLE"}`), want{Unavailable, SourceExplicit, unk, yes, agr, "explicit.unavailable", "UNAVAILABLE", 0}},
	{"explicit: gRPC UNAUTHENTICATED", toolErrStruct("x", `{"code":"UNAUTHENTICATED"}`), want{Unauthenticated, SourceExplicit, unk, no, agr, "explicit.unauthenticated", "UNAUTHENTICATED", 0}},
	{"explicit: gRPC PERMISSION_DENIED", toolErrStruct("x", `{"code":"PERMISSION_DENIED"}`), want{PermissionDenied, SourceExplicit, unk, no, agr, "explicit.permission_denied", "PERMISSION_DENIED", 0}},
	{"explicit: gRPC NOT_FOUND", toolErrStruct("x", `{"code":"NOT_FOUND"}`), want{NotFound, SourceExplicit, unk, no, agr, "explicit.not_found", "NOT_FOUND", 0}},
	{"explicit: gRPC INTERNAL", toolErrStruct("x", `{"code":"INTERNAL"}`), want{Internal, SourceExplicit, unk, yes, agr, "explicit.internal", "INTERNAL", 0}},
	{"explicit: gRPC UNKNOWN is an unknown server error, INTERNAL", toolErrStruct("x", `{"code":"UNKNOWN"}`), want{Internal, SourceExplicit, unk, yes, agr, "explicit.internal", "UNKNOWN", 0}},
	{"explicit: gRPC CANCELLED on an isError result is misflagged", toolErrStruct("x", `{"code":"CANCELLED"}`), want{Cancelled, SourceExplicit, unk, no, mis, "explicit.cancelled", "CANCELLED", 0}},
	{"explicit: gRPC FAILED_PRECONDITION is INVALID_ARGUMENT", toolErrStruct("x", `{"code":"FAILED_PRECONDITION"}`), want{InvalidArgument, SourceExplicit, unk, no, agr, "explicit.invalid_argument", "FAILED_PRECONDITION", 0}},
	{"explicit: gRPC OUT_OF_RANGE is INVALID_ARGUMENT", toolErrStruct("x", `{"code":"OUT_OF_RANGE"}`), want{InvalidArgument, SourceExplicit, unk, no, agr, "explicit.invalid_argument", "OUT_OF_RANGE", 0}},
	{"explicit: gRPC ALREADY_EXISTS is INVALID_ARGUMENT", toolErrStruct("x", `{"code":"ALREADY_EXISTS"}`), want{InvalidArgument, SourceExplicit, unk, no, agr, "explicit.invalid_argument", "ALREADY_EXISTS", 0}},
	{"explicit: gRPC ABORTED is UNAVAILABLE", toolErrStruct("x", `{"code":"ABORTED"}`), want{Unavailable, SourceExplicit, unk, yes, agr, "explicit.unavailable", "ABORTED", 0}},
	{"explicit: gRPC UNIMPLEMENTED is INTERNAL and not retryable", toolErrStruct("x", `{"code":"UNIMPLEMENTED"}`), want{Internal, SourceExplicit, unk, no, agr, "explicit.internal.permanent", "UNIMPLEMENTED", 0}},
	{"explicit: gRPC DATA_LOSS is INTERNAL and not retryable", toolErrStruct("x", `{"code":"DATA_LOSS"}`), want{Internal, SourceExplicit, unk, no, agr, "explicit.internal.permanent", "DATA_LOSS", 0}},
	{"explicit: gRPC INVALID_ARGUMENT", toolErrStruct("x", `{"code":"INVALID_ARGUMENT"}`), want{InvalidArgument, SourceExplicit, unk, no, agr, "explicit.invalid_argument", "INVALID_ARGUMENT", 0}},
	{"explicit: synonym AUTH_EXPIRED", toolErrStruct("x", `{"errorCode":"AUTH_EXPIRED"}`), want{Unauthenticated, SourceExplicit, unk, no, agr, "explicit.unauthenticated", "AUTH_EXPIRED", 0}},
	{"explicit: synonym TOKEN_EXPIRED", toolErrStruct("x", `{"errorCode":"TOKEN_EXPIRED"}`), want{Unauthenticated, SourceExplicit, unk, no, agr, "explicit.unauthenticated", "TOKEN_EXPIRED", 0}},
	{"explicit: synonym VALIDATION", toolErrStruct("x", `{"errorCode":"VALIDATION"}`), want{InvalidArgument, SourceExplicit, unk, no, agr, "explicit.invalid_argument", "VALIDATION", 0}},
	{"explicit: synonym TIMEOUT", toolErrStruct("x", `{"errorCode":"TIMEOUT"}`), want{UpstreamTimeout, SourceExplicit, unk, yes, agr, "explicit.upstream_timeout", "TIMEOUT", 0}},
	{"explicit: synonym NETWORK", toolErrStruct("x", `{"errorCode":"NETWORK"}`), want{Unavailable, SourceExplicit, unk, yes, agr, "explicit.unavailable", "NETWORK", 0}},
	{"explicit: synonym UPSTREAM_5XX", toolErrStruct("x", `{"errorCode":"UPSTREAM_5XX"}`), want{Unavailable, SourceExplicit, unk, yes, agr, "explicit.unavailable", "UPSTREAM_5XX", 0}},
	{"explicit: our own name UNKNOWN_TOOL", toolErrStruct("x", `{"errorCode":"UNKNOWN_TOOL"}`), want{UnknownTool, SourceExplicit, unk, no, agr, "explicit.unknown_tool", "UNKNOWN_TOOL", 0}},
	{"explicit: camel case RateLimited normalizes", toolErrStruct("x", `{"errorCode":"RateLimited"}`), want{RateLimited, SourceExplicit, unk, yes, agr, "explicit.rate_limited", "RateLimited", 0}},
	{"explicit: exception class name in error.type drops the Error suffix", toolErrStruct("x", `{"error":{"type":"TimeoutError","message":"read timeout"}}`), want{UpstreamTimeout, SourceExplicit, unk, yes, agr, "explicit.upstream_timeout", "TimeoutError", 0}},
	{"explicit: HTTP 429 as a number", toolErrStruct("x", `{"code":429,"message":"Too Many Requests"}`), want{RateLimited, SourceExplicit, unk, yes, agr, "explicit.rate_limited", "429", 0}},
	{"explicit: HTTP 503 as a numeric string", toolErrStruct("x", `{"code":"503"}`), want{Unavailable, SourceExplicit, unk, yes, agr, "explicit.unavailable", "503", 0}},
	{"explicit: HTTP 401", toolErrStruct("x", `{"code":401}`), want{Unauthenticated, SourceExplicit, unk, no, agr, "explicit.unauthenticated", "401", 0}},
	{"explicit: HTTP 403", toolErrStruct("x", `{"code":403}`), want{PermissionDenied, SourceExplicit, unk, no, agr, "explicit.permission_denied", "403", 0}},
	{"explicit: HTTP 404", toolErrStruct("x", `{"code":404}`), want{NotFound, SourceExplicit, unk, no, agr, "explicit.not_found", "404", 0}},
	{"explicit: HTTP 400", toolErrStruct("x", `{"code":400}`), want{InvalidArgument, SourceExplicit, unk, no, agr, "explicit.invalid_argument", "400", 0}},
	{"explicit: HTTP 408", toolErrStruct("x", `{"code":408}`), want{UpstreamTimeout, SourceExplicit, unk, yes, agr, "explicit.upstream_timeout", "408", 0}},
	{"explicit: HTTP 409", toolErrStruct("x", `{"code":409}`), want{InvalidArgument, SourceExplicit, unk, no, agr, "explicit.invalid_argument", "409", 0}},
	{"explicit: HTTP 422", toolErrStruct("x", `{"code":422}`), want{InvalidArgument, SourceExplicit, unk, no, agr, "explicit.invalid_argument", "422", 0}},
	{"explicit: HTTP 500", toolErrStruct("x", `{"code":500}`), want{Internal, SourceExplicit, unk, yes, agr, "explicit.internal", "500", 0}},
	{"explicit: HTTP 502", toolErrStruct("x", `{"code":502}`), want{Unavailable, SourceExplicit, unk, yes, agr, "explicit.unavailable", "502", 0}},
	{"explicit: HTTP 504", toolErrStruct("x", `{"code":504}`), want{UpstreamTimeout, SourceExplicit, unk, yes, agr, "explicit.upstream_timeout", "504", 0}},
	{"explicit: unknown code is UNCLASSIFIED and kept", toolErrStruct("quota hit", `{"errorCode":"E_QUOTA_42"}`), want{Unclassified, SourceExplicit, unk, no, agr, "explicit.unknown_code", "E_QUOTA_42", 0}},
	{"explicit: unknown code is not silently mapped by text", toolErrStruct("rate limit exceeded", `{"code":"KB-7731"}`), want{Unclassified, SourceExplicit, unk, no, agr, "explicit.unknown_code", "KB-7731", 0}},
	{"explicit: our own UNCLASSIFIED is kept as a known code", toolErrStruct("x", `{"errorCode":"UNCLASSIFIED"}`), want{Unclassified, SourceExplicit, unk, no, agr, "explicit.unclassified", "UNCLASSIFIED", 0}},
	{"explicit: errorCode takes precedence over code", toolErrStruct("x", `{"errorCode":"RATE_LIMITED","code":500}`), want{RateLimited, SourceExplicit, unk, yes, agr, "explicit.rate_limited", "RATE_LIMITED", 0}},
	{"explicit: a known reason decides when errorCode is unknown, which is kept", toolErrStruct("x", `{"errorCode":"E42","reason":"RATE_LIMITED"}`), want{RateLimited, SourceExplicit, unk, yes, agr, "explicit.rate_limited", "E42", 0}},
	{"explicit: code beats contradicting text", toolErrStruct("timeout talking to db", `{"errorCode":"PERMISSION_DENIED"}`), want{PermissionDenied, SourceExplicit, unk, no, agr, "explicit.permission_denied", "PERMISSION_DENIED", 0}},
	{"explicit: status name inside an error object", toolErrStruct("x", `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"Quota exceeded"}}`), want{RateLimited, SourceExplicit, unk, yes, agr, "explicit.rate_limited", "429", 0}},
	{"explicit: status name on an isError result counts", toolErrStruct("x", `{"status":"RESOURCE_EXHAUSTED"}`), want{RateLimited, SourceExplicit, unk, yes, agr, "explicit.rate_limited", "RESOURCE_EXHAUSTED", 0}},
	{"explicit: EMPTY_RESULT code on an isError result is misflagged", toolErrStruct("no documents", `{"errorCode":"EMPTY_RESULT"}`), want{EmptyResult, SourceExplicit, unk, no, mis, "explicit.empty_result", "EMPTY_RESULT", 0}},
	{"explicit: user declined is CANCELLED, not a failure", okStruct(`{"errorCode":"USER_DECLINED"}`, "The user declined."), want{Cancelled, SourceExplicit, unk, no, agr, "explicit.cancelled", "USER_DECLINED", 0}},

	// --- Hidden failures signalled in structured payloads.
	{"hidden: error true with a rate limit message on isError false (awslabs/mcp #1689)", okStruct(`{"error":true,"message":"Rate limit exceeded for account"}`), want{RateLimited, SourceText, unk, yes, mis, "text.rate_limit.en", "", 0}},
	{"hidden: success false with an error string", okStruct(`{"success":false,"error":"permission denied for repo acme/kb"}`), want{PermissionDenied, SourceText, unk, no, mis, "text.permission_denied.en", "", 0}},
	{"hidden: ok false alone is an unclassified failure", okStruct(`{"ok":false}`), want{Unclassified, SourceExplicit, unk, no, mis, "explicit.error_flag", "", 0}},
	{"hidden: error true alone is an unclassified failure", structured(`{"error":true}`), want{Unclassified, SourceExplicit, unk, no, mis, "explicit.error_flag", "", 0}},
	{"hidden: GraphQL errors array", okStruct(`{"data":null,"errors":[{"message":"Not authorized to access this resource"}]}`), want{PermissionDenied, SourceText, unk, no, mis, "text.permission_denied.en", "", 0}},
	{"hidden: status error with a timeout message", okStruct(`{"status":"error","message":"upstream timeout after 10s"}`), want{UpstreamTimeout, SourceText, unk, yes, mis, "text.timeout.en", "", 0}},
	{"hidden: Chinese API code 500 with msg", okStruct(`{"code":500,"msg":"服务器内部错误"}`), want{Internal, SourceExplicit, unk, yes, mis, "explicit.internal", "500", 0}},
	{"hidden: errorCode on isError false is a hidden failure", okStruct(`{"errorCode":"TOKEN_EXPIRED","message":"please sign in again"}`), want{Unauthenticated, SourceExplicit, unk, no, mis, "explicit.unauthenticated", "TOKEN_EXPIRED", 0}},
	{"hidden: \\u-escaped Chinese error message is decoded", okStruct(`{"success":false,"message":"\u8bf7\u6c42\u8fc7\u4e8e\u9891\u7e41"}`), want{RateLimited, SourceText, unk, yes, mis, "text.rate_limit.zh", "", 0}},
	{"hidden: error JSON in a text block without structuredContent", okFalse(`{"error":{"code":"RATE_LIMITED","message":"slow down"},"retry_after":2}`), want{RateLimited, SourceExplicit, yes, yes, mis, "explicit.rate_limited", "RATE_LIMITED", 2000}},
	{"not hidden: code 0 with msg success is a Chinese API success", structured(`{"code":0,"msg":"success","data":{"items":[{"id":1}]}}`), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"not hidden: a top-level code that names no error is data", structured(`{"code":"AAPL","price":187.2}`), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"not hidden: a category that names no error is data", structured(`{"category":"electronics","items":[{"sku":"a1"}]}`), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"not hidden: a status number on a success is data", structured(`{"url":"https://example.com/x","status":404}`), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"not hidden: error null and success true", structured(`{"success":true,"error":null,"results":[{"id":1}]}`), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"not hidden: error none is no error", structured(`{"error":"none","results":[{"id":1}]}`), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"text: isError JSON without a message field is read as text", toolErr(`{"upstream":"search","state":"timed out"}`), want{UpstreamTimeout, SourceText, unk, yes, agr, "text.timeout.en", "", 0}},
	{"text: FastAPI detail field on isError", toolErr(`{"detail":"Not Found"}`), want{NotFound, SourceText, unk, no, agr, "text.not_found.en", "", 0}},
	{"not hidden: a retryable field on a success is not a declaration", structured(`{"job":"sync","retryable":true,"items":[1]}`), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},

	// --- result._meta and error.data.
	{"meta: namespaced errorCode and retryAfter seconds in result._meta", withMeta(toolErr("quota hit"), `{"com.example/errorCode":"QUOTA_EXCEEDED","com.example/retryAfter":30}`), want{RateLimited, SourceExplicit, yes, yes, agr, "explicit.rate_limited", "QUOTA_EXCEEDED", 30000}},
	{"meta: serverInfo only in _meta is no signal", withMeta(ok("42 documents indexed"), `{"io.modelcontextprotocol/serverInfo":{"name":"kb","version":"1.2"}}`), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"error.data: errorCode beats the -32603 code", rpcErrData(-32603, "handler failed", `{"errorCode":"TOKEN_EXPIRED"}`), want{Unauthenticated, SourceExplicit, unk, no, agr, "explicit.unauthenticated", "TOKEN_EXPIRED", 0}},
	{"error.data: retryable false is declared, expected stays from the taxonomy", rpcErrData(-32603, "rate limit exceeded", `{"retryable":false}`), want{RateLimited, SourceText, no, yes, agr, "text.rate_limit.en", "", 0}},
	{"error.data: Google-style error with retryDelay", rpcErrData(-32603, "quota", `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"},"retryDelay":"30s"}`), want{RateLimited, SourceExplicit, yes, yes, agr, "explicit.rate_limited", "429", 30000}},
	{"error.data: retry_after in seconds as a string implies retryable", rpcErrData(-32000, "Server busy", `{"retry_after":"2"}`), want{Unavailable, SourceText, yes, yes, agr, "text.unavailable.en", "", 2000}},
	{"error.data: retry_after_ms alone implies retryable", rpcErrData(503, "unavailable", `{"retry_after_ms":250}`), want{Unavailable, SourceJSONRPC, yes, yes, agr, "jsonrpc.http.unavailable", "", 250}},
	{"error.data: retriable false wins over a retry-after hint", rpcErrData(429, "slow down", `{"retriable":false,"retryAfterMs":1000}`), want{RateLimited, SourceJSONRPC, no, yes, agr, "jsonrpc.http.too_many_requests", "", 1000}},
	{"error.data: retryable as a string", rpcErrData(-32603, "upstream 503", `{"retryable":"true"}`), want{Unavailable, SourceText, yes, yes, agr, "text.unavailable.en", "", 0}},
	{"error.data: a plain string is read as text", rpcErrData(-32000, "Server error", `"connection pool exhausted"`), want{Unavailable, SourceText, unk, yes, agr, "text.unavailable.pool.en", "", 0}},
	{"error.data: an unknown code there is UNCLASSIFIED, not the -32602 mapping", rpcErrData(-32602, "Invalid params", `{"code":"E_SCHEMA"}`), want{Unclassified, SourceExplicit, unk, no, agr, "explicit.unknown_code", "E_SCHEMA", 0}},
	{"error.data: an unknown reason is kept but does not decide", rpcErrData(-32602, "Unknown tool: foo", `{"reason":"tool_missing"}`), want{UnknownTool, SourceJSONRPC, unk, no, agr, "jsonrpc.invalid_params.unknown_tool", "tool_missing", 0}},
	{"error.data: resource uri of -32002 is no code", rpcErrData(-32002, "Resource not found", `{"uri":"file:///tmp/x"}`), want{NotFound, SourceJSONRPC, unk, no, agr, "jsonrpc.resource_not_found", "", 0}},
	{"error.data: a JSON-RPC code mirrored in data is ignored", rpcErrData(-32602, "Invalid params", `{"code":-32602}`), want{InvalidArgument, SourceJSONRPC, unk, no, agr, "jsonrpc.invalid_params", "", 0}},

	// --- JSON-RPC error codes (§3.1, §3.5).
	{"jsonrpc: -32700 parse error", rpcErr(-32700, "Parse error"), want{InvalidArgument, SourceJSONRPC, unk, no, agr, "jsonrpc.parse_error", "", 0}},
	{"jsonrpc: -32600 invalid request", rpcErr(-32600, "Invalid Request"), want{InvalidArgument, SourceJSONRPC, unk, no, agr, "jsonrpc.invalid_request", "", 0}},
	{"jsonrpc: -32601 method not found is a non-retryable INTERNAL", rpcErr(-32601, "Method not found"), want{Internal, SourceJSONRPC, unk, no, agr, "jsonrpc.method_not_found", "", 0}},
	{"jsonrpc: -32601 naming a tool is UNKNOWN_TOOL", rpcErr(-32601, "Method not found: tool search_doc"), want{UnknownTool, SourceJSONRPC, unk, no, agr, "jsonrpc.method_not_found.tool", "", 0}},
	{"jsonrpc: -32602 Unknown tool (spec example, Python)", rpcErr(-32602, "Unknown tool: invalid_tool_name"), want{UnknownTool, SourceJSONRPC, unk, no, agr, "jsonrpc.invalid_params.unknown_tool", "", 0}},
	{"jsonrpc: -32602 Tool X not found (TypeScript v2)", rpcErr(-32602, "Tool search_doc not found"), want{UnknownTool, SourceJSONRPC, unk, no, agr, "jsonrpc.invalid_params.unknown_tool", "", 0}},
	{"jsonrpc: -32602 Tool X disabled (TypeScript v2)", rpcErr(-32602, "Tool legacy_search disabled"), want{UnknownTool, SourceJSONRPC, unk, no, agr, "jsonrpc.invalid_params.unknown_tool", "", 0}},
	{"jsonrpc: -32602 unknown tool quoted (go-sdk)", rpcErr(-32602, `unknown tool "search_doc"`), want{UnknownTool, SourceJSONRPC, unk, no, agr, "jsonrpc.invalid_params.unknown_tool", "", 0}},
	{"jsonrpc: -32602 tool 'X' not found (mcp-go)", rpcErr(-32602, "tool 'search_doc' not found: tool not found"), want{UnknownTool, SourceJSONRPC, unk, no, agr, "jsonrpc.invalid_params.unknown_tool", "", 0}},
	{"jsonrpc: -32602 invalid arguments (spec example)", rpcErr(-32602, "Invalid arguments for tool calculate: Missing required property 'expression'"), want{InvalidArgument, SourceJSONRPC, unk, no, agr, "jsonrpc.invalid_params", "", 0}},
	{"jsonrpc: -32602 resource not found (2026-07-28)", rpcErr(-32602, "Resource file:///tmp/x.txt not found"), want{NotFound, SourceJSONRPC, unk, no, agr, "jsonrpc.invalid_params.not_found", "", 0}},
	{"jsonrpc: -32602 bare", rpcErr(-32602, "Invalid params"), want{InvalidArgument, SourceJSONRPC, unk, no, agr, "jsonrpc.invalid_params", "", 0}},
	{"jsonrpc: -32603 bare is INTERNAL", rpcErr(-32603, "Internal error"), want{Internal, SourceJSONRPC, unk, yes, agr, "jsonrpc.internal_error", "", 0}},
	{"jsonrpc: -32603 handler error from mcp-go refined by rate limit text", rpcErr(-32603, "rate limit exceeded for org acme"), want{RateLimited, SourceText, unk, yes, agr, "text.rate_limit.en", "", 0}},
	{"jsonrpc: -32603 refined by timeout text", rpcErr(-32603, "upstream search timed out after 30s"), want{UpstreamTimeout, SourceText, unk, yes, agr, "text.timeout.en", "", 0}},
	{"jsonrpc: -32603 refined by connection refused", rpcErr(-32603, "failed to query: dial tcp 10.0.0.5:5432: connect: connection refused"), want{Unavailable, SourceText, unk, yes, agr, "text.unavailable.en", "", 0}},
	{"jsonrpc: -32603 refined by a missing department", rpcErr(-32603, "department finace does not exist"), want{InvalidArgument, SourceText, unk, no, agr, "text.invalid_argument.named_value.en", "", 0}},
	{"jsonrpc: -32603 output validation (mcp-go with WithOutputSchemaValidation off, handler check)", rpcErr(-32603, "output validation failed: missing field results"), want{Internal, SourceJSONRPC, unk, no, agr, "jsonrpc.output_validation", "", 0}},
	{"jsonrpc: -32002 resource not found", rpcErr(-32002, "Resource not found"), want{NotFound, SourceJSONRPC, unk, no, agr, "jsonrpc.resource_not_found", "", 0}},
	{"jsonrpc: -32042 URL elicitation required is UNAUTHENTICATED", rpcErrData(-32042, "This request requires more information.", `{"elicitations":[{"mode":"url","url":"https://auth.example/x"}]}`), want{Unauthenticated, SourceJSONRPC, unk, no, agr, "jsonrpc.url_elicitation_required", "", 0}},
	{"jsonrpc: -32000 connection closed", rpcErr(-32000, "Connection closed"), want{Unavailable, SourceJSONRPC, unk, yes, agr, "jsonrpc.connection_closed", "", 0}},
	{"jsonrpc: -32000 third-party generic tool error refined by text", rpcErr(-32000, "Tool execution failed: invalid date 2024-13-01"), want{InvalidArgument, SourceText, unk, no, agr, "text.invalid_argument.en", "", 0}},
	{"jsonrpc: -32000 without a signal falls back to UNAVAILABLE", rpcErr(-32000, "Server error"), want{Unavailable, SourceJSONRPC, unk, yes, agr, "jsonrpc.implementation_defined.-32000", "", 0}},
	{"jsonrpc: -32001 request timeout (TypeScript v1, local): no answer is UNAVAILABLE", localRPC(-32001, "Request timed out"), want{Unavailable, SourceJSONRPC, unk, yes, agr, "jsonrpc.timeout", "", 0}},
	{"jsonrpc: -32001 unknown error (go-sdk) is UNCLASSIFIED", rpcErr(-32001, "unknown error"), want{Unclassified, SourceJSONRPC, unk, no, agr, "jsonrpc.implementation_defined.-32001", "", 0}},
	{"jsonrpc: -32001 third-party code refined by text", rpcErr(-32001, "TOOL_EXECUTION_FAILED: too many requests"), want{RateLimited, SourceText, unk, yes, agr, "text.rate_limit.en", "", 0}},
	{"jsonrpc: -32003 client closing (go-sdk)", localRPC(-32003, "client is closing"), want{Unavailable, SourceJSONRPC, unk, yes, agr, "jsonrpc.closing", "", 0}},
	{"jsonrpc: -32004 server closing (go-sdk)", rpcErr(-32004, "server is closing"), want{Unavailable, SourceJSONRPC, unk, yes, agr, "jsonrpc.closing", "", 0}},
	{"jsonrpc: -32005 rejected by transport (go-sdk)", rpcErr(-32005, "rejected by transport"), want{Unavailable, SourceJSONRPC, unk, yes, agr, "jsonrpc.closing", "", 0}},
	{"jsonrpc: -32800 request interrupted is CANCELLED (mcp-go)", rpcErr(-32800, "request interrupted"), want{Cancelled, SourceJSONRPC, unk, no, agr, "jsonrpc.request_interrupted", "", 0}},
	{"jsonrpc: -32800 interrupted by a deadline is UPSTREAM_TIMEOUT", rpcErr(-32800, "request interrupted: context deadline exceeded"), want{UpstreamTimeout, SourceJSONRPC, unk, yes, agr, "jsonrpc.timeout", "", 0}},
	{"jsonrpc: -32020 header mismatch", rpcErr(-32020, "Mcp-Name header does not match params.name"), want{InvalidArgument, SourceJSONRPC, unk, no, agr, "jsonrpc.protocol_mismatch", "", 0}},
	{"jsonrpc: -32021 missing client capability", rpcErrData(-32021, "Missing required client capability", `{"requiredCapabilities":["elicitation"]}`), want{InvalidArgument, SourceJSONRPC, unk, no, agr, "jsonrpc.protocol_mismatch", "", 0}},
	{"jsonrpc: -32022 unsupported protocol version", rpcErrData(-32022, "Unsupported protocol version", `{"supported":["2026-07-28"],"requested":"2024-11-05"}`), want{InvalidArgument, SourceJSONRPC, unk, no, agr, "jsonrpc.protocol_mismatch", "", 0}},
	{"jsonrpc: -1 sampling rejected is CANCELLED", rpcErr(-1, "User rejected sampling request"), want{Cancelled, SourceJSONRPC, unk, no, agr, "jsonrpc.sampling_rejected", "", 0}},
	{"jsonrpc: 0 output validation (go-sdk) is a non-retryable INTERNAL", rpcErr(0, `validating tool output: validating root: required: missing properties: ["results"]`), want{Internal, SourceJSONRPC, unk, no, agr, "jsonrpc.output_validation", "", 0}},
	{"jsonrpc: 0 without a signal is UNCLASSIFIED", rpcErr(0, "something odd happened"), want{Unclassified, SourceJSONRPC, unk, no, agr, "jsonrpc.uncoded", "", 0}},
	{"jsonrpc: 0 refined by text", rpcErr(0, "calling tool: context deadline exceeded"), want{UpstreamTimeout, SourceText, unk, yes, agr, "text.timeout.en", "", 0}},
	{"jsonrpc: 408 Python v1 client timeout: no answer is UNAVAILABLE", localRPC(408, "Timed out while waiting for response to ClientRequest. Waited 30.0 seconds."), want{Unavailable, SourceJSONRPC, unk, yes, agr, "jsonrpc.client_timeout", "", 0}},
	{"jsonrpc: positive 429 maps as HTTP", rpcErr(429, "Too Many Requests"), want{RateLimited, SourceJSONRPC, unk, yes, agr, "jsonrpc.http.too_many_requests", "", 0}},
	{"jsonrpc: positive 503 maps as HTTP", rpcErr(503, "Service Unavailable"), want{Unavailable, SourceJSONRPC, unk, yes, agr, "jsonrpc.http.unavailable", "", 0}},
	{"jsonrpc: positive 401 maps as HTTP", rpcErr(401, "Unauthorized"), want{Unauthenticated, SourceJSONRPC, unk, no, agr, "jsonrpc.http.unauthorized", "", 0}},
	{"jsonrpc: positive 404 maps as HTTP", rpcErr(404, "Not Found"), want{NotFound, SourceJSONRPC, unk, no, agr, "jsonrpc.http.not_found", "", 0}},
	{"jsonrpc: positive 504 maps as HTTP", rpcErr(504, "Gateway Timeout"), want{UpstreamTimeout, SourceJSONRPC, unk, yes, agr, "jsonrpc.http.gateway_timeout", "", 0}},
	{"jsonrpc: positive 400 maps as HTTP", rpcErr(400, "Bad Request"), want{InvalidArgument, SourceJSONRPC, unk, no, agr, "jsonrpc.http.bad_request", "", 0}},
	{"jsonrpc: positive 403 maps as HTTP", rpcErr(403, "Forbidden"), want{PermissionDenied, SourceJSONRPC, unk, no, agr, "jsonrpc.http.forbidden", "", 0}},
	{"jsonrpc: positive 499 client closed request is CANCELLED", rpcErr(499, "Client Closed Request"), want{Cancelled, SourceJSONRPC, unk, no, agr, "jsonrpc.http.client_closed", "", 0}},
	{"jsonrpc: positive 500 maps as HTTP", rpcErr(500, "Internal Server Error"), want{Internal, SourceJSONRPC, unk, yes, agr, "jsonrpc.http.internal", "", 0}},
	{"jsonrpc: positive 501 is a non-retryable INTERNAL", rpcErr(501, "Not Implemented"), want{Internal, SourceJSONRPC, unk, no, agr, "jsonrpc.http.not_implemented", "", 0}},
	{"jsonrpc: an unknown application code is UNCLASSIFIED", rpcErr(1001, "custom failure"), want{Unclassified, SourceJSONRPC, unk, no, agr, "jsonrpc.unknown_code", "", 0}},
	{"jsonrpc: an unknown application code refined by text", rpcErr(1001, "quota exceeded for tenant"), want{RateLimited, SourceText, unk, yes, agr, "text.rate_limit.en", "", 0}},
	{"jsonrpc: an unknown reserved code is UNCLASSIFIED", rpcErr(-32099, "weird"), want{Unclassified, SourceJSONRPC, unk, no, agr, "jsonrpc.unknown_code", "", 0}},

	// --- TypeScript SDK v1 embeds the code in isError text.
	{"embedded: MCP error -32602 Tool X not found", toolErr("MCP error -32602: Tool search_doc not found"), want{UnknownTool, SourceJSONRPC, unk, no, agr, "jsonrpc.invalid_params.unknown_tool", "-32602", 0}},
	{"embedded: MCP error -32602 Tool X disabled", toolErr("MCP error -32602: Tool legacy_search disabled"), want{UnknownTool, SourceJSONRPC, unk, no, agr, "jsonrpc.invalid_params.unknown_tool", "-32602", 0}},
	{"embedded: MCP error -32602 input validation", toolErr("MCP error -32602: Input validation error: Invalid arguments for tool add: [{\"code\":\"invalid_type\",\"path\":[\"a\"],\"message\":\"Required\"}]"), want{InvalidArgument, SourceJSONRPC, unk, no, agr, "jsonrpc.invalid_params", "-32602", 0}},
	{"embedded: MCP error -32602 output validation is the server's fault", toolErr("MCP error -32602: Output validation error: Invalid structured content for tool search"), want{Internal, SourceJSONRPC, unk, no, agr, "jsonrpc.invalid_params.output_validation", "-32602", 0}},
	{"embedded: MCP error -32603 refined by text", toolErr("MCP error -32603: rate limit exceeded"), want{RateLimited, SourceText, unk, yes, agr, "text.rate_limit.en", "-32603", 0}},
	{"embedded: MCP error -32603 without a signal", toolErr("MCP error -32603: boom"), want{Internal, SourceJSONRPC, unk, yes, agr, "jsonrpc.internal_error", "-32603", 0}},

	// --- Text rules on isError results, both languages.
	{"text: 请求过于频繁", toolErr("请求过于频繁，请稍后再试"), want{RateLimited, SourceText, unk, yes, agr, "text.rate_limit.zh", "", 0}},
	{"text: 触发限流", toolErr("触发限流，当前 QPS 超过 50"), want{RateLimited, SourceText, unk, yes, agr, "text.rate_limit.zh", "", 0}},
	{"text: 频率限制", toolErr("频率限制：每分钟最多 60 次调用"), want{RateLimited, SourceText, unk, yes, agr, "text.rate_limit.zh", "", 0}},
	{"text: 429 Too Many Requests", toolErr("Error: 429 Too Many Requests"), want{RateLimited, SourceText, unk, yes, agr, "text.rate_limit.en", "", 0}},
	{"text: quota exceeded", toolErr("Quota exceeded for quota metric 'Queries' of service 'search'"), want{RateLimited, SourceText, unk, yes, agr, "text.rate_limit.en", "", 0}},
	{"text: 429 inside a longer number is not a rate limit", toolErr("search scanned 14290 documents and then stopped"), want{Unclassified, SourceDefault, unk, no, agr, "default.failure", "", 0}},
	{"text: timed out", toolErr("request timed out after 30s"), want{UpstreamTimeout, SourceText, unk, yes, agr, "text.timeout.en", "", 0}},
	{"text: deadline exceeded", toolErr("rpc error: code = DeadlineExceeded desc = context deadline exceeded"), want{UpstreamTimeout, SourceText, unk, yes, agr, "text.timeout.en", "", 0}},
	{"text: 超时", toolErr("上游接口超时，请稍后重试"), want{UpstreamTimeout, SourceText, unk, yes, agr, "text.timeout.zh", "", 0}},
	{"text: connection refused", toolErr("dial tcp 127.0.0.1:5432: connect: connection refused"), want{Unavailable, SourceText, unk, yes, agr, "text.unavailable.en", "", 0}},
	{"text: ECONNREFUSED", toolErr("Error: connect ECONNREFUSED 10.1.2.3:9200"), want{Unavailable, SourceText, unk, yes, agr, "text.unavailable.en", "", 0}},
	{"text: pool exhausted beats a timeout", toolErr("connection pool exhausted: timed out waiting for a connection"), want{Unavailable, SourceText, unk, yes, agr, "text.unavailable.pool.en", "", 0}},
	{"text: 503 Service Unavailable", toolErr("503 Service Unavailable"), want{Unavailable, SourceText, unk, yes, agr, "text.unavailable.en", "", 0}},
	{"text: 服务不可用", toolErr("知识库服务不可用"), want{Unavailable, SourceText, unk, yes, agr, "text.unavailable.zh", "", 0}},
	{"text: 连接失败", toolErr("数据库连接失败"), want{Unavailable, SourceText, unk, yes, agr, "text.unavailable.zh", "", 0}},
	{"text: 401 Unauthorized", toolErr("GitHub API returned 401 Unauthorized"), want{Unauthenticated, SourceText, unk, no, agr, "text.unauthenticated.en", "", 0}},
	{"text: token has expired", toolErr("The access token has expired"), want{Unauthenticated, SourceText, unk, no, agr, "text.unauthenticated.en", "", 0}},
	{"text: invalid token", toolErr("invalid token: signature mismatch"), want{Unauthenticated, SourceText, unk, no, agr, "text.unauthenticated.en", "", 0}},
	{"text: 未授权", toolErr("未授权访问，请先登录"), want{Unauthenticated, SourceText, unk, no, agr, "text.unauthenticated.zh", "", 0}},
	{"text: 认证失败", toolErr("认证失败：API Key 不正确"), want{Unauthenticated, SourceText, unk, no, agr, "text.unauthenticated.zh", "", 0}},
	{"text: permission denied", toolErr("open /srv/kb/hr/salaries.csv: permission denied"), want{PermissionDenied, SourceText, unk, no, agr, "text.permission_denied.en", "", 0}},
	{"text: 403 Forbidden", toolErr("403 Forbidden"), want{PermissionDenied, SourceText, unk, no, agr, "text.permission_denied.en", "", 0}},
	{"text: 无权限", toolErr("无权限访问该知识库"), want{PermissionDenied, SourceText, unk, no, agr, "text.permission_denied.zh", "", 0}},
	{"text: 没有权限", toolErr("您没有权限查看财务制度"), want{PermissionDenied, SourceText, unk, no, agr, "text.permission_denied.zh", "", 0}},
	{"text: not found on a failure is NOT_FOUND", toolErr("File not found: report-2025.pdf"), want{NotFound, SourceText, unk, no, agr, "text.not_found.en", "", 0}},
	{"text: 未找到该文件 on a failure is NOT_FOUND", toolErr("未找到该文件"), want{NotFound, SourceText, unk, no, agr, "text.not_found.zh", "", 0}},
	{"text: no results on isError is a misflagged empty result", toolErr("No results found for query 'finace'"), want{EmptyResult, SourceText, unk, no, mis, "text.empty.no_results.en", "", 0}},
	{"text: 未找到匹配文档 on isError is a misflagged empty result", toolErr("未找到匹配文档"), want{EmptyResult, SourceText, unk, no, mis, "text.empty.no_results.zh", "", 0}},
	{"text: 查无 on isError is a misflagged empty result", toolErr("查无此人"), want{EmptyResult, SourceText, unk, no, mis, "text.empty.no_results.zh", "", 0}},
	{"text: a timeout beats the empty text that follows it", toolErr("请求超时，未找到结果"), want{UpstreamTimeout, SourceText, unk, yes, agr, "text.timeout.zh", "", 0}},
	{"text: spec example invalid departure date", toolErr("Invalid departure date: must be in the future. Current date is 08/08/2025."), want{InvalidArgument, SourceText, unk, no, agr, "text.invalid_argument.en", "", 0}},
	{"text: FastMCP pydantic validation error", toolErr("Error executing tool search_docs: 1 validation error for search_docsArguments\ndepartment\n  Input should be 'finance', 'hr' or 'legal'"), want{InvalidArgument, SourceText, unk, no, agr, "text.invalid_argument.schema.en", "", 0}},
	{"text: Python low-level input validation", toolErr("Input validation error: 'department' is a required property"), want{InvalidArgument, SourceText, unk, no, agr, "text.invalid_argument.schema.en", "", 0}},
	{"text: go-sdk validating arguments", toolErr(`validating "arguments": validating root: required: missing properties: ["query"]`), want{InvalidArgument, SourceText, unk, no, agr, "text.invalid_argument.schema.en", "", 0}},
	{"text: TypeScript v2 input validation", toolErr("Input validation error: Invalid arguments for tool search: expected string, received number"), want{InvalidArgument, SourceText, unk, no, agr, "text.invalid_argument.schema.en", "", 0}},
	{"text: 参数错误", toolErr("参数错误：department 必须是枚举值之一"), want{InvalidArgument, SourceText, unk, no, agr, "text.invalid_argument.schema.zh", "", 0}},
	{"text: 格式不正确 is a generic INVALID_ARGUMENT", toolErr("日期格式不正确，应为 YYYY-MM-DD"), want{InvalidArgument, SourceText, unk, no, agr, "text.invalid_argument.zh", "", 0}},
	{"text: a validation message about a timeout field is still INVALID_ARGUMENT", toolErr("1 validation error for fetchArguments\ntimeout\n  Input should be a valid integer"), want{InvalidArgument, SourceText, unk, no, agr, "text.invalid_argument.schema.en", "", 0}},
	{"text: FastMCP Unknown tool", toolErr("Unknown tool: search_doc"), want{UnknownTool, SourceText, unk, no, agr, "text.unknown_tool.en", "", 0}},
	{"text: Tool X not found without the MCP error prefix", toolErr("Tool search_doc not found"), want{UnknownTool, SourceText, unk, no, agr, "text.unknown_tool.en", "", 0}},
	{"text: 未知工具", toolErr("未知工具：search_doc"), want{UnknownTool, SourceText, unk, no, agr, "text.unknown_tool.zh", "", 0}},
	{"text: output validation error is a non-retryable INTERNAL", toolErr("Output validation error: 'results' is a required property"), want{Internal, SourceText, unk, no, agr, "text.internal.output_validation", "", 0}},
	{"text: Python traceback is INTERNAL", toolErr("Traceback (most recent call last):\n  File \"server.py\", line 42, in search\nKeyError: 'results'"), want{Internal, SourceText, unk, yes, agr, "text.internal.crash", "", 0}},
	{"text: traceback ending in a connection error names the cause", toolErr("Traceback (most recent call last):\n  File \"db.py\", line 9\nConnectionRefusedError: [Errno 111] Connection refused"), want{Unavailable, SourceText, unk, yes, agr, "text.unavailable.en", "", 0}},
	{"text: Go panic mentioning invalid memory is INTERNAL, not INVALID_ARGUMENT", toolErr("panic: runtime error: invalid memory address or nil pointer dereference"), want{Internal, SourceText, unk, yes, agr, "text.internal.crash", "", 0}},
	{"text: Java exception", toolErr("java.lang.IllegalStateException: index closed\n\tat com.acme.Search.run(Search.java:42)"), want{Internal, SourceText, unk, yes, agr, "text.internal.en", "", 0}},
	{"text: FastMCP handler exception", toolErr("Error executing tool search_docs: division by zero"), want{Internal, SourceText, unk, yes, agr, "text.internal.en", "", 0}},
	{"text: 内部错误", toolErr("内部错误，请联系管理员"), want{Internal, SourceText, unk, yes, agr, "text.internal.zh", "", 0}},
	{"text: 系统异常", toolErr("系统异常"), want{Internal, SourceText, unk, yes, agr, "text.internal.zh", "", 0}},
	{"text: HTTP 502 Bad Gateway", toolErr("Error: HTTP 502 Bad Gateway"), want{Unavailable, SourceText, unk, yes, agr, "text.unavailable.en", "", 0}},
	{"text: HTTP 500 Internal Server Error", toolErr("HTTP 500 Internal Server Error"), want{Internal, SourceText, unk, yes, agr, "text.internal.en", "", 0}},
	{"text: HTTP 504 Gateway Timeout", toolErr("HTTP 504 Gateway Timeout"), want{UpstreamTimeout, SourceText, unk, yes, agr, "text.timeout.en", "", 0}},
	{"text: user cancelled on isError is misflagged CANCELLED", toolErr("Operation cancelled by user"), want{Cancelled, SourceText, unk, no, mis, "text.cancelled.en", "", 0}},
	{"text: 已取消", toolErr("任务已取消"), want{Cancelled, SourceText, unk, no, mis, "text.cancelled.zh", "", 0}},
	{"text: English matching ignores case", toolErr("RATE LIMIT EXCEEDED"), want{RateLimited, SourceText, unk, yes, agr, "text.rate_limit.en", "", 0}},
	{"text: the second text block is read too", toolErr("search failed", "cause: upstream timeout"), want{UpstreamTimeout, SourceText, unk, yes, agr, "text.timeout.en", "", 0}},
	{"default: isError without text is UNCLASSIFIED", withBlocks(toolErr(), 0), want{Unclassified, SourceDefault, unk, no, agr, "default.failure", "", 0}},
	{"default: isError with an unknown message is UNCLASSIFIED", toolErr("something went wrong"), want{Unclassified, SourceDefault, unk, no, agr, "default.failure", "", 0}},
	{"default: isError with structured empty results is not EMPTY_RESULT", toolErrStruct("search backend failed", `{"results":[]}`), want{Unclassified, SourceDefault, unk, no, agr, "default.failure", "", 0}},

	// --- Hidden failures in the text of results not flagged isError.
	{"hidden: Error prefix with a rate limit (isError absent)", ok("Error: rate limit exceeded, retry in 30s"), want{RateLimited, SourceText, unk, yes, mis, "text.rate_limit.en", "", 0}},
	{"hidden: Error prefix with an unknown cause", okFalse("Error: something bad happened"), want{Unclassified, SourceText, unk, no, mis, "hidden.error_prefix", "", 0}},
	{"hidden: markdown-decorated error prefix", ok("**Error:** upstream service unavailable"), want{Unavailable, SourceText, unk, yes, mis, "text.unavailable.en", "", 0}},
	{"hidden: traceback in a success", ok("Traceback (most recent call last):\n  File \"tool.py\", line 3, in run\nAttributeError: 'NoneType' object has no attribute 'get'"), want{Internal, SourceText, unk, yes, mis, "text.internal.crash", "", 0}},
	{"hidden: Go panic in a success", ok("panic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:\nmain.main()"), want{Internal, SourceText, unk, yes, mis, "text.internal.crash", "", 0}},
	{"hidden: HTTP 503 quoted in a success", ok("Upstream returned HTTP 503, please retry"), want{Unavailable, SourceText, unk, yes, mis, "text.unavailable.en", "", 0}},
	{"hidden: status code 500 quoted in a success", ok("Request failed with status code 500"), want{Internal, SourceText, unk, yes, mis, "text.internal.en", "", 0}},
	{"hidden: 连接池耗尽 in a success", okFalse("连接池耗尽，请稍后重试"), want{Unavailable, SourceText, unk, yes, mis, "text.unavailable.pool.zh", "", 0}},
	{"hidden: 令牌过期 in a success", okFalse("令牌过期，请重新登录"), want{Unauthenticated, SourceText, unk, no, mis, "text.unauthenticated.zh", "", 0}},
	{"hidden: 请求过于频繁 in a success", ok("请求过于频繁"), want{RateLimited, SourceText, unk, yes, mis, "text.rate_limit.zh", "", 0}},
	{"hidden: permission denied in a success", ok("Permission denied"), want{PermissionDenied, SourceText, unk, no, mis, "text.permission_denied.en", "", 0}},
	{"hidden: missing required parameter with is_error false (github-mcp-server #1952)", okFalse("missing required parameter: owner"), want{InvalidArgument, SourceText, unk, no, mis, "text.invalid_argument.schema.en", "", 0}},
	{"hidden: department not found with a value in a success", okFalse("Department 'finace' not found"), want{InvalidArgument, SourceText, unk, no, mis, "text.invalid_argument.named_value.en", "", 0}},
	{"hidden: unknown tool text in a success", ok("Unknown tool: search_doc"), want{UnknownTool, SourceText, unk, no, mis, "text.unknown_tool.en", "", 0}},
	{"hidden: error prefix whose message says nothing matched is an empty result", ok("Error: no results found"), want{EmptyResult, SourceText, unk, no, agr, "text.empty.no_results.en", "", 0}},
	{"not hidden: a long document that mentions timeouts and 429", ok(longDoc), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"not hidden: a short answer about timeout settings", ok("Set the timeout to 30s in config.yaml."), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"not hidden: a short answer about the rate limit policy", ok("The API rate limit is 100 requests per minute."), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"not hidden: a count that contains 429", ok("Found 14290 results; showing the first 10."), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},

	// --- Empty results on successes.
	{"empty: No matching documents", ok("No matching documents"), want{EmptyResult, SourceText, unk, no, agr, "text.empty.no_results.en", "", 0}},
	{"empty: not found on a success means nothing matched", ok("Document not found"), want{EmptyResult, SourceText, unk, no, agr, "text.empty.not_found.en", "", 0}},
	{"empty: 没有找到相关制度", okFalse("没有找到相关制度"), want{EmptyResult, SourceText, unk, no, agr, "text.empty.no_results.zh", "", 0}},
	{"empty: 未找到 on a success", okFalse("未找到"), want{EmptyResult, SourceText, unk, no, agr, "text.empty.not_found.zh", "", 0}},
	{"empty: 0 results", ok("0 results for \"travel cap\""), want{EmptyResult, SourceText, unk, no, agr, "text.empty.no_results.en", "", 0}},
	{"empty: 10 results is not 0 results", ok("10 results for \"travel cap\""), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"empty: no content blocks", withBlocks(ok(), 0), want{EmptyResult, SourceDefault, unk, no, agr, "empty.no_content", "", 0}},
	{"empty: only white space", ok("   \n\t"), want{EmptyResult, SourceDefault, unk, no, agr, "empty.blank_text", "", 0}},
	{"empty: two blank blocks, one an ideographic space", ok("", "\u3000"), want{EmptyResult, SourceDefault, unk, no, agr, "empty.blank_text", "", 0}},
	{"empty: results [] and total 0", structured(`{"results":[],"total":0}`), want{EmptyResult, SourceExplicit, unk, no, agr, "empty.structured", "", 0}},
	{"empty: structured empty array", structured(`[]`), want{EmptyResult, SourceExplicit, unk, no, agr, "empty.structured", "", 0}},
	{"empty: structured empty object", structured(`{}`), want{EmptyResult, SourceExplicit, unk, no, agr, "empty.structured", "", 0}},
	{"empty: structured null (2026-07-28)", structured(`null`), want{EmptyResult, SourceExplicit, unk, no, agr, "empty.structured", "", 0}},
	{"empty: items []", structured(`{"items":[],"next_cursor":null}`), want{EmptyResult, SourceExplicit, unk, no, agr, "empty.structured", "", 0}},
	{"empty: data []", structured(`{"data":[],"meta":{"page":1}}`), want{EmptyResult, SourceExplicit, unk, no, agr, "empty.structured", "", 0}},
	{"empty: documents []", structured(`{"documents":[]}`), want{EmptyResult, SourceExplicit, unk, no, agr, "empty.structured", "", 0}},
	{"empty: Elasticsearch hits", structured(`{"took":3,"hits":{"total":{"value":0,"relation":"eq"},"hits":[]}}`), want{EmptyResult, SourceExplicit, unk, no, agr, "empty.structured", "", 0}},
	{"empty: count 0", structured(`{"count":0}`), want{EmptyResult, SourceExplicit, unk, no, agr, "empty.structured", "", 0}},
	{"empty: GitHub search total_count 0", structured(`{"total_count":0,"incomplete_results":false,"items":[]}`), want{EmptyResult, SourceExplicit, unk, no, agr, "empty.structured", "", 0}},
	{"empty: num_results 0", structured(`{"query":"finace","num_results":0}`), want{EmptyResult, SourceExplicit, unk, no, agr, "empty.structured", "", 0}},
	{"empty: nested data.items []", structured(`{"data":{"items":[],"total":0}}`), want{EmptyResult, SourceExplicit, unk, no, agr, "empty.structured", "", 0}},
	{"empty: TypeScript v2 {result: []} wrap", structured(`{"result":[]}`), want{EmptyResult, SourceExplicit, unk, no, agr, "empty.structured", "", 0}},
	{"empty: pretty-printed mirror text does not count as content", okStruct(`{"results":[]}`, "{\n  \"results\": []\n}"), want{EmptyResult, SourceExplicit, unk, no, agr, "empty.structured", "", 0}},
	{"empty: structured empty with a human summary is still empty", okStruct(`{"results":[]}`, "Search complete."), want{EmptyResult, SourceExplicit, unk, no, agr, "empty.structured", "", 0}},
	{"empty: structured string No results (2026-07-28 any JSON)", structured(`"No results"`), want{EmptyResult, SourceText, unk, no, agr, "text.empty.no_results.en", "", 0}},
	{"empty: JSON text without structuredContent", ok(`{"results":[],"count":0}`), want{EmptyResult, SourceExplicit, unk, no, agr, "empty.json_text", "", 0}},
	{"empty: JSON text empty array", ok(`[]`), want{EmptyResult, SourceExplicit, unk, no, agr, "empty.json_text", "", 0}},
	{"ok: results with one hit", structured(`{"results":[{"id":"d1"}],"total":1}`), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"ok: TypeScript v2 {result: [..]} wrap with data", structured(`{"result":[1,2]}`), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"ok: JSON text with items", ok(`{"items":[{"id":1}],"count":1}`), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"ok: an image block only is content", withBlocks(ok(), 1), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"ok: empty structured plus an image block is content", withBlocks(structured(`{"results":[]}`), 2), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"ok: unknown block count without text is not called empty", withBlocks(ok(), -1), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"ok: structured number (2026-07-28)", structured(`42`), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"ok: malformed structured content is not empty", okStruct(`{"results":[`, "partial"), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},

	// --- Protocol revisions.
	{"protocol: absent isError is false (2025-06-18 go-sdk)", withVersion(ok("Current weather in New York: 72°F"), "2025-06-18"), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"protocol: explicit isError false (2024-11-05 Python v1)", withVersion(okFalse("Current weather in New York: 72°F"), "2024-11-05"), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"protocol: 2025-11-25 input validation as an isError result", withVersion(toolErr("Invalid departure date: must be in the future."), "2025-11-25"), want{InvalidArgument, SourceText, unk, no, agr, "text.invalid_argument.en", "", 0}},
	{"protocol: input_required is not a failure (2026-07-28)", withResultType(withBlocks(ok(), 0), "input_required"), want{OK, SourceJSONRPC, unk, no, agr, "protocol.input_required", "", 0}},
	{"protocol: complete result type", withResultType(ok("done"), "complete"), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},
	{"protocol: an unknown result type is not a failure by itself", withResultType(ok("queued"), "task_pending"), want{OK, SourceDefault, unk, no, agr, "default.ok", "", 0}},

	// --- No response.
	{"no response: no local error is UNAVAILABLE", noResp(""), want{Unavailable, SourceDefault, unk, yes, agr, "default.no_response", "", 0}},
	{"no response: a client timeout is UNAVAILABLE, naming the timeout rule", noResp("context deadline exceeded"), want{Unavailable, SourceText, unk, yes, agr, "text.timeout.en", "", 0}},
	{"no response: TypeScript v2 SdkErrorCode REQUEST_TIMEOUT", noResp("REQUEST_TIMEOUT"), want{Unavailable, SourceText, unk, yes, agr, "text.timeout.en", "", 0}},
	{"no response: TypeScript v2 SdkErrorCode CONNECTION_CLOSED", noResp("CONNECTION_CLOSED"), want{Unavailable, SourceText, unk, yes, agr, "text.unavailable.en", "", 0}},
	{"no response: connection reset by peer", noResp("read tcp 10.0.0.2:443: connection reset by peer"), want{Unavailable, SourceText, unk, yes, agr, "text.unavailable.en", "", 0}},
	{"no response: the caller cancelled", noResp("context canceled"), want{Cancelled, SourceText, unk, no, agr, "text.cancelled.en", "", 0}},
	{"no response: 超时", noResp("等待响应超时"), want{Unavailable, SourceText, unk, yes, agr, "text.timeout.zh", "", 0}},

	// --- Odd inputs.
	{"odd: nil input", nil, want{Unclassified, SourceDefault, unk, no, agr, "default.nil_input", "", 0}},
	{"odd: the zero Input is a call without response", &Input{}, want{Unavailable, SourceDefault, unk, yes, agr, "default.no_response", "", 0}},
	{"odd: isError out of range counts as true", &Input{HasResponse: true, IsError: 7, ContentBlocks: 1, Texts: []string{"rate limit exceeded"}}, want{RateLimited, SourceText, unk, yes, agr, "text.rate_limit.en", "", 0}},
	{"odd: invalid UTF-8 in text", toolErr("\xff\xfe timeout \xc3"), want{UpstreamTimeout, SourceText, unk, yes, agr, "text.timeout.en", "", 0}},
	{"odd: truncated structured error keeps what was read", toolErrStruct("x", `{"errorCode":"RATE_LIMITED","message":"unterminated`), want{RateLimited, SourceExplicit, unk, yes, agr, "explicit.rate_limited", "RATE_LIMITED", 0}},
	{"odd: a very long failure message is read head and tail", toolErr("Traceback (most recent call last):\n" + strings.Repeat("  File \"x.py\", line 1, in f\n", 400) + "TimeoutError: read timed out"), want{UpstreamTimeout, SourceText, unk, yes, agr, "text.timeout.en", "", 0}},
}

func TestClassify(t *testing.T) {
	c := Default()
	for _, tt := range classifyTests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.Classify(tt.in)
			w := tt.want
			rule := w.rule
			if rule == "" {
				rule = got.Rule
			}
			gs := summary(got.Category, got.Source, got.DeclaredRetryable, got.ExpectedRetryable, got.Misflagged, got.Rule, got.ErrorCode, got.RetryAfterMs)
			ws := summary(w.cat, w.src, w.decl, w.exp, w.mis, rule, w.code, w.ms)
			if gs != ws {
				t.Errorf("Classify() =\n  %s\nwant\n  %s", gs, ws)
			}
			if got.IsFailure != got.Category.Failure() {
				t.Errorf("IsFailure = %t, want %t", got.IsFailure, got.Category.Failure())
			}
			if wantIR := got.Rule == "protocol.input_required"; got.InputRequired != wantIR {
				t.Errorf("InputRequired = %t, want %t", got.InputRequired, wantIR)
			}
		})
	}
	if n := len(classifyTests); n < 150 {
		t.Errorf("the table has %d rows; keep at least 150", n)
	}
}
