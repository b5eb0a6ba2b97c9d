package classify

import (
	"strings"
	"testing"
)

// benchMix is a realistic traffic mix: successes dominate (plain text,
// structured results with a mirrored text block, JSON text, long
// documents), then tool errors, JSON-RPC errors and timeouts.
func benchMix() []*Input {
	doc := strings.Repeat("差旅报销上限按职级执行，详见附件。Travel reimbursement follows the policy table. ", 40)
	var mix []*Input
	add := func(n int, in *Input) {
		for range n {
			mix = append(mix, in)
		}
	}
	add(30, ok(txt("Current weather in New York: 72°F, partly cloudy.")))
	add(15, ok(txt(doc)))
	add(15, structured(`{"results":[{"id":"d1","title":"差旅制度","score":0.92},{"id":"d2","title":"报销流程","score":0.81}],"total":2}`))
	add(8, ok(txt(`{"items":[{"id":1,"name":"alpha"},{"id":2,"name":"beta"}],"count":2}`)))
	add(5, ok(txt("未找到匹配文档")))
	add(4, structured(`{"results":[],"total":0}`))
	add(5, toolErr("查询失败：数据库连接池耗尽"))
	add(4, toolErr("Error executing tool search_docs: 1 validation error for search_docsArguments\ndepartment\n  Input should be 'finance', 'hr' or 'legal'"))
	add(4, rpcErr(-32602, "Unknown tool: search_doc"))
	add(3, rpcErr(-32603, "failed to query upstream: rate limit exceeded"))
	add(3, &Input{HasResponse: false, IsError: -1, ContentBlocks: -1, LocalError: "context deadline exceeded"})
	add(2, toolErrStruct("Rate limited", `{"error":{"code":"RATE_LIMITED","retryAfterMs":1500}}`))
	add(2, ok(txt("Error: upstream returned HTTP 503 Service Unavailable")))
	return mix
}

func BenchmarkClassify(b *testing.B) {
	c := Default()
	mix := benchMix()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c.Classify(mix[i%len(mix)])
	}
}

func BenchmarkClassifySuccess(b *testing.B) {
	c := Default()
	for _, bc := range []struct {
		name string
		in   *Input
	}{
		{"short_text", ok(txt("Current weather in New York: 72°F, partly cloudy."))},
		{"long_text", ok(txt(strings.Repeat("Travel reimbursement follows the policy table. ", 80)))},
		{"structured", structured(`{"results":[{"id":"d1","title":"差旅制度","score":0.92}],"total":1}`)},
		{"json_text", ok(txt(`{"items":[{"id":1,"name":"alpha"},{"id":2,"name":"beta"}],"count":2}`))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.Classify(bc.in)
			}
		})
	}
}

// BenchmarkNew measures building a classifier (rules compiled, automata
// built), which happens once at startup and per `ingest rules check`.
func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(); err != nil {
			b.Fatal(err)
		}
	}
}
