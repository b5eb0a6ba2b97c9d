// Package classify decides the outcome of each MCP tools/call: one
// Category of the mcplens taxonomy (docs/taxonomy.md), whether it is a
// failure, what the server declared and what the taxonomy expects about
// retrying, and which signal and rule decided. Classify is a pure function
// of an Input and the rules; the only I/O in the package is LoadRules
// reading a rules file (docs/rules.md). The built-in rules are embedded
// from builtin_rules.yaml.
package classify

// Category is one class of the mcplens taxonomy (docs/taxonomy.md).
type Category string

// The taxonomy, v1. Failure and expected retryability of each category are
// given by Failure and ExpectedRetryable.
const (
	OK               Category = "OK"
	EmptyResult      Category = "EMPTY_RESULT"
	Cancelled        Category = "CANCELLED"
	InvalidArgument  Category = "INVALID_ARGUMENT"
	UnknownTool      Category = "UNKNOWN_TOOL"
	NotFound         Category = "NOT_FOUND"
	Unauthenticated  Category = "UNAUTHENTICATED"
	PermissionDenied Category = "PERMISSION_DENIED"
	RateLimited      Category = "RATE_LIMITED"
	UpstreamTimeout  Category = "UPSTREAM_TIMEOUT"
	Unavailable      Category = "UNAVAILABLE"
	Internal         Category = "INTERNAL"
	Unclassified     Category = "UNCLASSIFIED"
)

// Retryability values as stored in declared_retryable and expected_retryable.
const (
	RetryUnknown int8 = -1
	RetryNo      int8 = 0
	RetryYes     int8 = 1
)

// Source values stored in class_source: which kind of signal decided.
const (
	SourceExplicit = "explicit"
	SourceJSONRPC  = "jsonrpc"
	SourceText     = "text"
	SourceDefault  = "default"
)

// Categories lists every category in a fixed order.
var Categories = []Category{OK, EmptyResult, Cancelled, InvalidArgument, UnknownTool, NotFound,
	Unauthenticated, PermissionDenied, RateLimited, UpstreamTimeout, Unavailable, Internal, Unclassified}

// Failure reports whether calls of category c count as failures.
func (c Category) Failure() bool {
	switch c {
	case OK, EmptyResult, Cancelled:
		return false
	}
	return true
}

// ExpectedRetryable is the taxonomy's retry advice for c: RetryYes for
// transient faults, RetryNo for faults that a retry cannot fix and for
// non-failures. INTERNAL is retryable in a limited way and is reported as
// RetryYes; UNCLASSIFIED takes the safe default, RetryNo.
func (c Category) ExpectedRetryable() int8 {
	switch c {
	case RateLimited, UpstreamTimeout, Unavailable, Internal:
		return RetryYes
	}
	return RetryNo
}

// Input is what the classifier reads about one tools/call. Decoders fill it;
// it holds raw JSON where the server may have put structured error fields.
// Classify only reads it and keeps no reference to it after returning.
type Input struct {
	Server          string   // scopes rules and retry overrides
	Tool            string   // scopes rules and retry overrides
	ProtocolVersion string   // informational: every revision is read alike (absent isError means false)
	HasResponse     bool     // false: the call got no answer (client timeout, transport failure)
	IsError         int8     // -1 absent, 0 false, 1 true
	RPCError        bool     // the response was a JSON-RPC error (code may be 0, as go-sdk sends)
	RPCCode         int64    // JSON-RPC error code when RPCError
	RPCMessage      string   // JSON-RPC error message when RPCError
	ErrorData       []byte   // raw JSON-RPC error.data, nil when absent
	ResultType      string   // "" (treated as "complete"), "complete", "input_required", ...
	ContentBlocks   int      // number of content blocks; -1 unknown
	Texts           []string // the text of each text content block, in order
	Structured      []byte   // raw structuredContent, nil when absent
	ResultMeta      []byte   // raw result._meta, nil when absent
	LocalError      string   // a client-side error that never reached the wire (e.g. "timeout")
	// Arguments is the canonical JSON of params.arguments before redaction
	// ("{}" when absent). The built-in rules do not read it; the schema
	// validator (pipeline/validate.go) does, and it is never stored.
	Arguments []byte `json:"-"`
}

// Result is the classifier's verdict for one call.
type Result struct {
	Category          Category
	IsFailure         bool
	DeclaredRetryable int8   // what the server said; RetryUnknown when it said nothing
	ExpectedRetryable int8   // from the taxonomy (or a rule override)
	Source            string // SourceExplicit | SourceJSONRPC | SourceText | SourceDefault
	Rule              string // the id of the rule that decided, e.g. "text.rate_limit.en"
	ErrorCode         string // the raw explicit code as the server sent it, if any
	Misflagged        bool   // isError contradicts the classification
	RetryAfterMs      int64  // server's retry-after hint; 0 when absent
	InputRequired     bool   // resultType "input_required": not a failure, continuation follows
}
