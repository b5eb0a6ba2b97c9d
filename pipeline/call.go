package pipeline

import (
	"strings"
	"time"
)

// Call is one MCP tools/call: one row of the calls table. Decoders produce it,
// Normalize and Classify complete it, and the Writer inserts it. The order of
// Values matches the column list of insert_calls.sql (a test checks it).
//
// Sentinels replace NULL: -1 means unknown for DurationMs, IsError,
// ContentBlocks and the retryability fields; "" means absent for strings.
type Call struct {
	Time            time.Time // request time; the ts column keeps seconds, TimeMs the milliseconds
	TimeMs          int64     // unix milliseconds of the request
	DurationMs      int64     // -1 when unknown
	Tenant          string
	Server          string
	Tool            string
	SessionID       string // MCP session id as sent; "" for sessionless (2026-07-28) traffic
	SessionKey      string // session id, else trace id, else "call:<call id>" (docs/analytics.md)
	TraceID         string
	RequestID       string // JSON-RPC id in string form
	CallID          uint64 // hash of (tenant, server, session id, request id, time): the dedupe key
	Client          string
	ProtocolVersion string
	Source          string // "capture" or "otlp"
	Side            string // "client", "server", "both" (paired OTLP spans) or "" (captures)

	ArgsJSON  string // canonical arguments (sorted keys, compact), redacted
	ArgsHash  uint64 // hash of the canonical arguments, taken before redaction
	ArgKeys   []string
	ArgValues []string

	HasResponse   uint8 // 0: no answer (client timeout or transport failure)
	IsError       int8  // isError as sent: -1 absent, 0 false, 1 true
	RPCError      uint8 // 1 when the response was a JSON-RPC error
	RPCCode       int64 // JSON-RPC error code (0 when none, and go-sdk's plain errors)
	RPCMessage    string
	ResultType    string // "complete", "input_required", ... ("" when no result)
	ContentBlocks int32  // -1 when unknown
	TextBytes     int64
	HasStructured uint8
	Message       string // error message or first text block, truncated and redacted

	Category          string
	IsFailure         uint8
	DeclaredRetryable int8
	ExpectedRetryable int8
	ClassSource       string
	ClassRule         string
	ErrorCode         string // raw explicit code from the server
	Misflagged        uint8
	RetryAfterMs      int64
	Continuation      uint8 // 1: answers an input_required result; not a retry
	ArgsValidated     uint8 // 1: Tools.Check validated the arguments (passed or not)
	TaxonomyVersion   string
	IngestedMs        int64 // version column: the latest ingest of a call wins
}

// Values returns the row in the column order of insert_calls.sql.
func (c *Call) Values() []any {
	return []any{
		c.Time, c.TimeMs, c.DurationMs, c.Tenant, c.Server, c.Tool, c.SessionID, c.SessionKey,
		c.TraceID, c.RequestID, c.CallID, c.Client, c.ProtocolVersion, c.Source, c.Side,
		c.ArgsJSON, c.ArgsHash, c.ArgKeys, c.ArgValues,
		c.HasResponse, c.IsError, c.RPCError, c.RPCCode, c.RPCMessage, c.ResultType,
		c.ContentBlocks, c.TextBytes, c.HasStructured, c.Message,
		c.Category, c.IsFailure, c.DeclaredRetryable, c.ExpectedRetryable, c.ClassSource,
		c.ClassRule, c.ErrorCode, c.Misflagged, c.RetryAfterMs, c.Continuation, c.ArgsValidated,
		c.TaxonomyVersion, c.IngestedMs,
	}
}

// CallColumns returns the column names of insert_calls.sql, in order.
func CallColumns() []string {
	s := insertCallsSQL[strings.Index(insertCallsSQL, "INSERT"):]
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	parts := strings.Split(s[open+1:end], ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}
