package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
)

// ToolDef is one tool definition as one server announced it in a tools/list
// result: a row of the tool_definitions table, plus the time it was seen.
// Definitions are versioned by Hash; the schemas are canonical JSON (as
// NormalizeArgs writes arguments), "" when the definition has none.
type ToolDef struct {
	Tenant       string
	Server       string
	Tool         string
	Hash         uint64 // xxHash64 of Definition
	Title        string // title, else annotations.title
	Description  string
	InputSchema  string
	OutputSchema string
	// Hints as announced: -1 absent (the protocol default applies: readOnly
	// false, destructive true, idempotent false, openWorld true), 0 false,
	// 1 true.
	ReadOnlyHint    int8
	DestructiveHint int8
	IdempotentHint  int8
	OpenWorldHint   int8
	Definition      string // canonical JSON of the Tool object without _meta
	SeenMs          int64  // when the tools/list was answered (unix ms)
	IngestedMs      int64
}

// Values returns the row in the column order of insert_tool_definitions.sql.
func (d *ToolDef) Values() []any {
	return []any{d.Tenant, d.Server, d.Tool, d.Hash, d.Title, d.Description, d.InputSchema, d.OutputSchema,
		d.ReadOnlyHint, d.DestructiveHint, d.IdempotentHint, d.OpenWorldHint, d.Definition, d.SeenMs, d.IngestedMs}
}

// Idempotent reports whether repeating a call of the tool is harmless by its
// hints: idempotentHint or readOnlyHint true.
func (d *ToolDef) Idempotent() bool { return d.IdempotentHint == 1 || d.ReadOnlyHint == 1 }

// Limits of a tool list.
const (
	maxToolsPerList  = 10000
	maxToolNameBytes = 256
	methodToolsList  = "tools/list"
)

// DecodeToolsList decodes one NDJSON capture line whose request.method is
// tools/list into the definitions of its result (docs/capture-format.md).
// It returns ErrSkip for a line of any other method, and for a tools/list
// line without definitions to record: no response, an error response, or
// an empty page. The line's time is when the definitions were seen; tenant
// and server default as for tools/call lines, and opts.Tenants restricts the
// tenant the same way. Other errors reject the line. DecodeToolsList is
// safe for concurrent use; the results do not alias line.
func DecodeToolsList(line []byte, opts *DecodeOptions) ([]ToolDef, error) {
	lim := opts.limits()
	var l struct {
		Time    json.RawMessage `json:"time"`
		Tenant  json.RawMessage `json:"tenant"`
		Server  json.RawMessage `json:"server"`
		Request struct {
			Method json.RawMessage `json:"method"`
		} `json:"request"`
		Response struct {
			Result json.RawMessage `json:"result"`
		} `json:"response"`
	}
	if err := json.Unmarshal(line, &l); err != nil {
		return nil, fmt.Errorf("tools/list line: %w", err)
	}
	if method, _ := jsonString(l.Request.Method); method != methodToolsList {
		return nil, ErrSkip
	}
	var result struct {
		Tools json.RawMessage `json:"tools"`
	}
	if len(l.Response.Result) == 0 || l.Response.Result[0] != '{' {
		return nil, ErrSkip // no response, an error response, or a result that is not a ListToolsResult
	}
	if err := json.Unmarshal(l.Response.Result, &result); err != nil {
		return nil, fmt.Errorf("response.result: %w", err)
	}
	if noTools(result.Tools) {
		return nil, ErrSkip
	}
	ts, ok := jsonString(l.Time)
	if !ok {
		return nil, errors.New(`missing "time": the definitions need the time they were listed`)
	}
	ms, ok := parseRFC3339Millis([]byte(ts))
	if !ok || ms < 0 || ms >= maxTimeMs {
		return nil, fmt.Errorf("time: want RFC 3339 between 1970 and 2105, got %s", quoteShort([]byte(ts)))
	}
	tenant, err := optionalString(l.Tenant, "tenant")
	if err != nil {
		return nil, err
	}
	server, err := optionalString(l.Server, "server")
	if err != nil {
		return nil, err
	}
	return parseTools(result.Tools, "response.result.tools", tenant, server, ms, opts, lim)
}

// ParseToolList reads the body of POST /v1/tools and of `ingest tools`:
// {"tenant","server","time","tools":[...]}, a bare tools/list result
// {"tools":[...]}, or a JSON-RPC response whose result is one. tenant,
// server and at stand in for what the body leaves out (at: when the
// definitions were seen). An empty tools array is an error: there is
// nothing to record.
func ParseToolList(body []byte, tenant, server string, at time.Time, opts *DecodeOptions) ([]ToolDef, error) {
	lim := opts.limits()
	var b struct {
		Tenant json.RawMessage `json:"tenant"`
		Server json.RawMessage `json:"server"`
		Time   json.RawMessage `json:"time"`
		Tools  json.RawMessage `json:"tools"`
		Result json.RawMessage `json:"result"`
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return nil, errors.New(`want a JSON object: {"tenant","server","time","tools":[...]}, a tools/list result, or a JSON-RPC response`)
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	where := "tools"
	if noTools(b.Tools) && len(b.Result) > 0 && b.Result[0] == '{' {
		var r struct {
			Tools json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(b.Result, &r); err != nil {
			return nil, fmt.Errorf("result: %w", err)
		}
		b.Tools, where = r.Tools, "result.tools"
	}
	if noTools(b.Tools) {
		return nil, errors.New(`no tools: want a non-empty "tools" array`)
	}
	if v, err := optionalString(b.Tenant, "tenant"); err != nil {
		return nil, err
	} else if v != "" {
		tenant = v
	}
	if v, err := optionalString(b.Server, "server"); err != nil {
		return nil, err
	} else if v != "" {
		server = v
	}
	ms := at.UnixMilli()
	if ts, err := optionalString(b.Time, "time"); err != nil {
		return nil, err
	} else if ts != "" {
		var ok bool
		if ms, ok = parseRFC3339Millis([]byte(ts)); !ok {
			return nil, fmt.Errorf("time: want RFC 3339, got %s", quoteShort([]byte(ts)))
		}
	}
	if ms < 0 || ms >= maxTimeMs {
		return nil, fmt.Errorf("time: %s is out of range (1970 to 2105)", time.UnixMilli(ms).UTC().Format(time.RFC3339))
	}
	return parseTools(b.Tools, where, tenant, server, ms, opts, lim)
}

// parseTools reads a JSON array of Tool objects. A tool without a name
// rejects the whole list: its other tools would be recorded under a list
// the sender thinks failed.
func parseTools(raw json.RawMessage, where, tenant, server string, ms int64, opts *DecodeOptions, lim decodeLimits) ([]ToolDef, error) {
	if tenant == "" {
		tenant = lim.tenant
	}
	if server == "" {
		server = defaultServer
	}
	if opts != nil && len(opts.Tenants) > 0 && !slices.Contains(opts.Tenants, tenant) {
		return nil, fmt.Errorf("tenant %s is not allowed for this token (allowed: %s)",
			quoteShort([]byte(tenant)), strings.Join(opts.Tenants, ", "))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%s: want an array of tools", where)
	}
	if len(items) > maxToolsPerList {
		return nil, fmt.Errorf("%s: %d tools, more than %d in one list", where, len(items), maxToolsPerList)
	}
	ingested := lim.now().UnixMilli()
	defs := make([]ToolDef, 0, len(items))
	for i, item := range items {
		d, err := parseTool(item, lim.maxDepth)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", where, i, err)
		}
		d.Tenant, d.Server, d.SeenMs, d.IngestedMs = tenant, server, ms, ingested
		defs = append(defs, d)
	}
	return defs, nil
}

// parseTool reads one Tool object (mcp-and-otel reference §2.5). The hash
// covers every member but _meta, which carries data about the listing
// rather than the tool; icons, execution and unknown members count, since
// they are part of what the server announced.
func parseTool(raw json.RawMessage, maxDepth int) (ToolDef, error) {
	var m map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return ToolDef{}, errors.New("want a Tool object")
	}
	delete(m, "_meta")
	name, ok := jsonString(m["name"])
	switch {
	case !ok || name == "":
		return ToolDef{}, errors.New("name: want a non-empty string")
	case len(name) > maxToolNameBytes:
		return ToolDef{}, fmt.Errorf("name: longer than %d bytes", maxToolNameBytes)
	}
	whole, err := json.Marshal(m)
	if err != nil {
		return ToolDef{}, fmt.Errorf("re-encode: %w", err)
	}
	canon, err := canonicalJSON(whole, maxDepth)
	if err != nil {
		return ToolDef{}, err
	}
	d := ToolDef{Tool: name, Hash: xxhash.Sum64(canon), Definition: string(canon),
		ReadOnlyHint: -1, DestructiveHint: -1, IdempotentHint: -1, OpenWorldHint: -1}
	d.Title, _ = jsonString(m["title"])
	d.Description, _ = jsonString(m["description"])
	for _, f := range []struct {
		key string
		dst *string
	}{{"inputSchema", &d.InputSchema}, {"outputSchema", &d.OutputSchema}} {
		v := m[f.key]
		if absent(v) {
			continue
		}
		if v[0] != '{' && v[0] != 't' && v[0] != 'f' {
			return ToolDef{}, fmt.Errorf("%s: want a JSON Schema (an object or a boolean)", f.key)
		}
		c, err := canonicalJSON(v, maxDepth)
		if err != nil {
			return ToolDef{}, fmt.Errorf("%s: %w", f.key, err)
		}
		*f.dst = string(c)
	}
	if a := m["annotations"]; len(a) > 0 && a[0] == '{' {
		var ann map[string]json.RawMessage
		if json.Unmarshal(a, &ann) == nil {
			d.ReadOnlyHint = hint(ann["readOnlyHint"])
			d.DestructiveHint = hint(ann["destructiveHint"])
			d.IdempotentHint = hint(ann["idempotentHint"])
			d.OpenWorldHint = hint(ann["openWorldHint"])
			if d.Title == "" {
				d.Title, _ = jsonString(ann["title"])
			}
		}
	}
	return d, nil
}

// hint reads a boolean hint: -1 when absent or not a boolean.
func hint(v json.RawMessage) int8 {
	switch string(v) {
	case "true":
		return 1
	case "false":
		return 0
	}
	return -1
}

// canonicalJSON writes v in the canonical form of NormalizeArgs (sorted
// keys, no whitespace, one form per number), without redaction.
func canonicalJSON(v []byte, maxDepth int) ([]byte, error) {
	st := getState()
	defer putState(st)
	s := jscan{buf: v, maxDepth: maxDepth, kbuf: st.s.kbuf}
	st.canon.reset()
	if err := st.canon.value(&s); err != nil {
		return nil, err
	}
	s.ws()
	if s.pos < len(v) {
		return nil, s.unexpected("want end of input after the value")
	}
	st.s.kbuf = s.kbuf
	return bytes.Clone(st.canon.out), nil
}

// jsonString decodes a JSON string; ok is false for anything else.
func jsonString(v json.RawMessage) (string, bool) {
	var s string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// optionalString decodes a string member that may be absent or null.
func optionalString(v json.RawMessage, name string) (string, error) {
	if absent(v) {
		return "", nil
	}
	s, ok := jsonString(v)
	if !ok {
		return "", fmt.Errorf("%s: want string, got %s", name, kindName(v[0]))
	}
	return s, nil
}

// absent reports a member that is missing or null.
func absent(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || string(v) == "null"
}

// noTools reports a tools member that is missing, null or an empty array.
func noTools(v json.RawMessage) bool {
	return absent(v) || string(bytes.TrimSpace(v)) == "[]"
}
