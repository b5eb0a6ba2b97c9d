// Package pipeline turns MCP tools/call traces into classified rows of the
// calls table. Bytes → Call: decode.go (NDJSON captures; normalize.go and
// redact.go canonicalize and redact the arguments) and otlp.go (OTLP spans,
// read as otlp_view.go's span views — from pdata, or straight from a
// protobuf body by otlp_wire.go — and re-expressed as captures so both paths
// build identical rows) → classified
// by process.go with the classify package → queued by batch.go in a bounded
// buffer that pushes back → inserted by write.go with native batches.
// http.go and otlp_receiver.go are the receivers. Goroutines are started only
// by Batcher.Run and OTLP.Run (the span-pairing clock); both end with their
// context. Tool definitions (tools/list lines and spans, POST /v1/tools:
// tooldefs*.go) feed a catalog against which validate.go checks every call;
// their rows and the violations go through Tools' own memory queue, inserted
// by Tools.Run, which also ends with its context (docs/schemas.md).
package pipeline
