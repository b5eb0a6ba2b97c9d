package classify

// Input constructors keep table rows to one line. Each returns a fresh
// *Input, so rows can adjust it with the with… helpers.

// ok is a result without isError (go-sdk and TypeScript omit it on success).
func ok(texts ...string) *Input {
	return &Input{HasResponse: true, IsError: -1, ContentBlocks: len(texts), Texts: texts}
}

// okFalse is a result with an explicit isError: false (Python v1, spec examples).
func okFalse(texts ...string) *Input {
	in := ok(texts...)
	in.IsError = 0
	return in
}

// txt returns its argument; it marks a single text block in the benchmark mix.
func txt(s string) string { return s }

// toolErr is an isError: true result with text blocks.
func toolErr(texts ...string) *Input {
	in := ok(texts...)
	in.IsError = 1
	return in
}

// structured is a successful result with structuredContent and the text
// block that mirrors it (the spec's SHOULD).
func structured(js string) *Input {
	in := ok(js)
	in.Structured = []byte(js)
	return in
}

// okStruct is a successful result with structuredContent and the given
// text blocks.
func okStruct(js string, texts ...string) *Input {
	in := ok(texts...)
	in.Structured = []byte(js)
	return in
}

// toolErrStruct is an isError: true result with one text block and
// structuredContent.
func toolErrStruct(text, js string) *Input {
	in := toolErr(text)
	in.Structured = []byte(js)
	return in
}

// rpcErr is a JSON-RPC error response.
func rpcErr(code int64, msg string) *Input {
	return &Input{HasResponse: true, IsError: -1, ContentBlocks: -1, RPCError: true, RPCCode: code, RPCMessage: msg}
}

// rpcErrData is a JSON-RPC error response with error.data.
func rpcErrData(code int64, msg, data string) *Input {
	in := rpcErr(code, msg)
	in.ErrorData = []byte(data)
	return in
}

// noResp is a call that got no answer; local is the client's error.
func noResp(local string) *Input {
	return &Input{HasResponse: false, IsError: -1, ContentBlocks: -1, LocalError: local}
}

// localRPC is a client-side SDK error that carries a JSON-RPC code but
// never reached the wire (TypeScript v1 -32001, Python v1 408).
func localRPC(code int64, msg string) *Input {
	in := rpcErr(code, msg)
	in.HasResponse = false
	return in
}

func withMeta(in *Input, meta string) *Input {
	in.ResultMeta = []byte(meta)
	return in
}

func withBlocks(in *Input, n int) *Input {
	in.ContentBlocks = n
	return in
}

func withResultType(in *Input, rt string) *Input {
	in.ResultType = rt
	return in
}

func withVersion(in *Input, pv string) *Input {
	in.ProtocolVersion = pv
	return in
}

func on(in *Input, server, tool string) *Input {
	in.Server, in.Tool = server, tool
	return in
}
