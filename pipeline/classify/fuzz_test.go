package classify

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// fuzzRules adds user rules of every kind, scoped with globs, so the fuzzer
// also drives scoping, gates, prefixes, regexes and overrides.
const fuzzRules = `
version: 1
rules:
  - id: fuzz.text
    server: "k?-*"
    tool: "*search*"
    match: {text: ["db_busy", "忙*稍后"], prefix: ["warn:"], regex: ['\bretry in \d+s\b']}
    category: UNAVAILABLE
  - id: fuzz.gate
    when: success
    gate: true
    match: {prefix: ["oops"]}
    category: INTERNAL
  - id: fuzz.code
    match: {explicit_code: ["DB_BUSY", 599]}
    category: UNAVAILABLE
    expected_retryable: false
  - id: fuzz.rpc
    match: {jsonrpc_code: [-32099], message: ['^custom']}
    category: RATE_LIMITED
retry_overrides:
  - server: kb
    category: INTERNAL
    expected_retryable: false
`

func FuzzClassify(f *testing.F) {
	for _, tt := range classifyTests {
		in := tt.in
		if in == nil {
			continue
		}
		f.Add(in.HasResponse, in.IsError, in.RPCError, in.RPCCode, in.RPCMessage, in.ErrorData, in.ResultType,
			in.ContentBlocks, strings.Join(in.Texts, "\x00"), in.Structured, in.ResultMeta, in.LocalError, in.Server)
	}
	rs, err := ParseRules("fuzz.yaml", []byte(fuzzRules))
	if err != nil {
		f.Fatal(err)
	}
	custom, err := New(rs)
	if err != nil {
		f.Fatal(err)
	}
	classifiers := []*Classifier{Default(), custom}
	f.Fuzz(func(t *testing.T, hasResp bool, isErr int8, rpcErr bool, code int64, msg string, data []byte,
		resultType string, blocks int, texts string, structured, meta []byte, local, server string) {
		in := &Input{Server: server, Tool: "search_docs", HasResponse: hasResp, IsError: isErr, RPCError: rpcErr,
			RPCCode: code, RPCMessage: msg, ErrorData: data, ResultType: resultType, ContentBlocks: blocks,
			Structured: structured, ResultMeta: meta, LocalError: local}
		if texts != "" {
			in.Texts = strings.Split(texts, "\x00")
		}
		for _, c := range classifiers {
			got := c.Classify(in)
			if !slices.Contains(Categories, got.Category) {
				t.Fatalf("Category = %q, not in Categories", got.Category)
			}
			if got.IsFailure != got.Category.Failure() {
				t.Fatalf("IsFailure = %t for %s", got.IsFailure, got.Category)
			}
			for name, v := range map[string]int8{"ExpectedRetryable": got.ExpectedRetryable, "DeclaredRetryable": got.DeclaredRetryable} {
				if v < RetryUnknown || v > RetryYes {
					t.Fatalf("%s = %d, want -1, 0 or 1", name, v)
				}
			}
			if !slices.Contains([]string{SourceExplicit, SourceJSONRPC, SourceText, SourceDefault}, got.Source) {
				t.Fatalf("Source = %q", got.Source)
			}
			if got.Rule == "" || got.Rule == "default.recovered" {
				t.Fatalf("Rule = %q: Classify panicked or decided without a rule", got.Rule)
			}
			if got.RetryAfterMs < 0 || !utf8.ValidString(got.ErrorCode) {
				t.Fatalf("RetryAfterMs = %d, ErrorCode = %q", got.RetryAfterMs, got.ErrorCode)
			}
			if again := c.Classify(in); again != got {
				t.Fatalf("Classify is not deterministic: %+v then %+v", got, again)
			}
		}
	})
}

// TestClassifyConcurrent runs the table from many goroutines at once
// (run it with -race) and checks every verdict matches a sequential run.
func TestClassifyConcurrent(t *testing.T) {
	c := Default()
	want := make([]Result, len(classifyTests))
	for i, tt := range classifyTests {
		want[i] = c.Classify(tt.in)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range classifyTests {
				j := (i + g*37) % len(classifyTests)
				if got := c.Classify(classifyTests[j].in); got != want[j] {
					t.Errorf("%s: concurrent %+v, sequential %+v", classifyTests[j].name, got, want[j])
				}
			}
		})
	}
	wg.Wait()
}
