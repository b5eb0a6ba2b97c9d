package classify

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// builtinHash is the SHA-256 prefix of builtin_rules.yaml at its current
// revision. Changing the file without bumping `revision` would store rows
// classified under different rules with the same taxonomy version.
const (
	builtinHash     = "fd3e2a3a08feadd1"
	builtinRevision = 2
)

func TestBuiltinRulesRevision(t *testing.T) {
	sum := sha256.Sum256(builtinRules)
	got := hex.EncodeToString(sum[:8])
	rs, err := builtinSet()
	if err != nil {
		t.Fatal(err)
	}
	if got != builtinHash || rs.Revision != builtinRevision {
		t.Errorf("builtin_rules.yaml is hash %s revision %d, want hash %s revision %d: when you change the rules, "+
			"bump `revision` in the file and update builtinHash and builtinRevision here", got, rs.Revision, builtinHash, builtinRevision)
	}
	if v, want := Default().Version(), "v1+builtin."+string(rune('0'+builtinRevision)); v != want {
		t.Errorf("Default().Version() = %q, want %q", v, want)
	}
}

// TestBuiltinRulesRoundTrip checks that the embedded rules parse and that
// writing them out as JSON and as YAML and parsing that again gives the
// same rules: the file format loses nothing.
func TestBuiltinRulesRoundTrip(t *testing.T) {
	rs, err := ParseRules("builtin_rules.yaml", builtinRules)
	if err != nil {
		t.Fatalf("built-in rules: %v", err)
	}
	if len(rs.Rules) < 50 {
		t.Fatalf("built-in rules hold %d rules, want the full set", len(rs.Rules))
	}
	js, err := json.Marshal(rs)
	if err != nil {
		t.Fatal(err)
	}
	ym, err := yaml.Marshal(rs)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"rules.json": js, "rules.yaml": ym} {
		back, err := ParseRules(name, data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(back.Rules, rs.Rules) || !reflect.DeepEqual(back.RetryOverrides, rs.RetryOverrides) ||
			back.Version != rs.Version || back.Revision != rs.Revision {
			t.Errorf("%s: round trip changed the rules", name)
		}
		if back.hash() != rs.hash() {
			t.Errorf("%s: hash %s, want %s", name, back.hash(), rs.hash())
		}
	}
}

// TestBuiltinExplicitCodesUnique checks that no code is listed by two
// built-in explicit rules, where only file order would decide.
func TestBuiltinExplicitCodesUnique(t *testing.T) {
	rs, err := builtinSet()
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{}
	for _, r := range rs.compiled {
		for code := range r.codes {
			if prev, ok := owner[code]; ok {
				t.Errorf("code %s is listed by %s and %s", code, prev, r.id)
			}
			owner[code] = r.id
		}
	}
}

// TestEveryBuiltinRuleIsPinned checks that each built-in rule decides at
// least one row of the classify table. Gates other than the error prefix
// mark failures but leave the category to the failure rules, so they show
// up as misflagged rows instead.
func TestEveryBuiltinRuleIsPinned(t *testing.T) {
	rs, err := builtinSet()
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]bool{}
	for _, tt := range classifyTests {
		pinned[tt.want.rule] = true
	}
	for _, r := range rs.compiled {
		if r.gate && r.id != "hidden.error_prefix" {
			continue
		}
		if !pinned[r.id] {
			t.Errorf("no classify table row pins rule %s", r.id)
		}
	}
}

func TestRuleSets(t *testing.T) {
	const kbRules = `
version: 1
rules:
  - id: kb.db_busy
    description: kb answers DB_BUSY when its database is overloaded.
    server: kb
    match: {text: ["DB_BUSY"], lang: en}
    category: UNAVAILABLE
  - id: kb.db_busy.code
    server: kb
    match: {explicit_code: [DB_BUSY]}
    category: UNAVAILABLE
  - id: payments.timeout
    description: A payment may have gone through; never retry a timeout blindly.
    tool: "payments_*"
    match: {text: ["timed out"]}
    category: UPSTREAM_TIMEOUT
    expected_retryable: false
  - id: cts.tool_timeout
    description: CTS_MCP sends -32002 for its own tool timeout, not for a missing resource.
    server: "cts-*"
    match: {jsonrpc_code: [-32002], message: ['^TOOL_TIMEOUT']}
    category: UPSTREAM_TIMEOUT
  - id: kb.reindexing
    when: success
    server: kb
    match: {text: ["索引重建中"], lang: zh}
    category: UNAVAILABLE
retry_overrides:
  - server: kb
    category: INTERNAL
    expected_retryable: false
`
	const replaceRules = `
version: 1
rules:
  - id: jsonrpc.request_interrupted
    description: Our mcp-go servers only interrupt on their own deadline.
    match: {jsonrpc_code: [-32800]}
    category: UPSTREAM_TIMEOUT
  - id: text.empty.not_found.en
    disabled: true
  - id: maintenance
    stage: jsonrpc
    match: {text: ["maintenance window"]}
    category: UNAVAILABLE
  - id: late.db_busy
    priority: -1
    match: {text: ["DB_BUSY"]}
    category: UNAVAILABLE
`
	const laterRules = `{"version": 1, "rules": [{"id": "kb.db_busy", "server": "kb", "match": {"text": ["DB_BUSY"]}, "category": "RATE_LIMITED"}]}`

	type verdict struct {
		cat  Category
		src  string
		exp  int8
		mis  bool
		rule string
	}
	tests := []struct {
		name  string
		rules []string
		in    *Input
		want  verdict
	}{
		{"custom text rule for server kb maps DB_BUSY to UNAVAILABLE", []string{kbRules}, on(toolErr("DB_BUSY: internal error, retry later"), "kb", "search_docs"), verdict{Unavailable, SourceText, yes, agr, "kb.db_busy"}},
		{"the kb rule does not apply to another server", []string{kbRules}, on(toolErr("DB_BUSY: internal error, retry later"), "wiki", "search_docs"), verdict{Internal, SourceText, yes, agr, "text.internal.en"}},
		{"without user rules DB_BUSY text is INTERNAL", nil, on(toolErr("DB_BUSY: internal error, retry later"), "kb", "search_docs"), verdict{Internal, SourceText, yes, agr, "text.internal.en"}},
		{"a custom explicit code instead of UNCLASSIFIED", []string{kbRules}, on(toolErrStruct("busy", `{"errorCode":"DB_BUSY"}`), "kb", "search_docs"), verdict{Unavailable, SourceExplicit, yes, agr, "kb.db_busy.code"}},
		{"without the rule the code is unknown", nil, on(toolErrStruct("busy", `{"errorCode":"DB_BUSY"}`), "kb", "search_docs"), verdict{Unclassified, SourceExplicit, no, agr, "explicit.unknown_code"}},
		{"retry override: for server kb INTERNAL is not retryable", []string{kbRules}, on(toolErr("internal error"), "kb", "search_docs"), verdict{Internal, SourceText, no, agr, "text.internal.en"}},
		{"retry override does not touch other servers", []string{kbRules}, on(toolErr("internal error"), "wiki", "search_docs"), verdict{Internal, SourceText, yes, agr, "text.internal.en"}},
		{"rule-level expected_retryable with a tool glob", []string{kbRules}, on(toolErr("charge timed out"), "billing", "payments_charge"), verdict{UpstreamTimeout, SourceText, no, agr, "payments.timeout"}},
		{"the tool glob does not match other tools", []string{kbRules}, on(toolErr("charge timed out"), "billing", "refund"), verdict{UpstreamTimeout, SourceText, yes, agr, "text.timeout.en"}},
		{"jsonrpc code with a message regex for a server glob", []string{kbRules}, on(rpcErr(-32002, "TOOL_TIMEOUT: tool ran for 60s"), "cts-prod", "run"), verdict{UpstreamTimeout, SourceJSONRPC, yes, agr, "cts.tool_timeout"}},
		{"the same code from another server keeps its meaning", []string{kbRules}, on(rpcErr(-32002, "TOOL_TIMEOUT: tool ran for 60s"), "kb", "run"), verdict{NotFound, SourceJSONRPC, no, agr, "jsonrpc.resource_not_found"}},
		{"a success rule marks a hidden failure", []string{kbRules}, on(okFalse("索引重建中，请稍候"), "kb", "search_docs"), verdict{Unavailable, SourceText, yes, mis, "kb.reindexing"}},
		{"same id replaces a built-in rule in place", []string{replaceRules}, rpcErr(-32800, "request interrupted"), verdict{UpstreamTimeout, SourceJSONRPC, yes, agr, "jsonrpc.request_interrupted"}},
		{"disabled removes a built-in rule", []string{replaceRules}, ok("Document not found"), verdict{OK, SourceDefault, no, agr, "default.ok"}},
		{"stage jsonrpc puts a text rule before the code rules", []string{replaceRules}, rpcErr(-32602, "tool unavailable during maintenance window"), verdict{Unavailable, SourceText, yes, agr, "maintenance"}},
		{"priority -1 runs after the built-in rules of the stage", []string{replaceRules}, toolErr("DB_BUSY: internal error"), verdict{Internal, SourceText, yes, agr, "text.internal.en"}},
		{"priority -1 still decides when no built-in rule matches", []string{replaceRules}, toolErr("DB_BUSY"), verdict{Unavailable, SourceText, yes, agr, "late.db_busy"}},
		{"a later set overrides an earlier one", []string{kbRules, laterRules}, on(toolErr("DB_BUSY"), "kb", "search_docs"), verdict{RateLimited, SourceText, yes, agr, "kb.db_busy"}},
	}
	built := map[string]*Classifier{} // one classifier per combination of files
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := strings.Join(tt.rules, "\x00")
			c, ok := built[key]
			if !ok {
				var sets []*RuleSet
				for i, r := range tt.rules {
					rs, err := ParseRules("rules"+string(rune('0'+i))+".yaml", []byte(r))
					if err != nil {
						t.Fatal(err)
					}
					sets = append(sets, rs)
				}
				var err error
				if c, err = New(sets...); err != nil {
					t.Fatal(err)
				}
				built[key] = c
			}
			got := c.Classify(tt.in)
			gv := verdict{got.Category, got.Source, got.ExpectedRetryable, got.Misflagged, got.Rule}
			if gv != tt.want {
				t.Errorf("Classify() = %+v, want %+v", gv, tt.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	parse := func(s string) *RuleSet {
		rs, err := ParseRules("r.yaml", []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	a := `
version: 1
rules:
  - id: a
    match: {text: [x]}
    category: INTERNAL
`
	// Same rules, other formatting and a comment: same version.
	a2 := "# kb rules\n" + `{"version": 1, "rules": [{"id": "a", "category": "INTERNAL", "match": {"text": ["x"]}}]}`
	b := strings.Replace(a, "INTERNAL", "UNAVAILABLE", 1)
	version := func(sets ...*RuleSet) string {
		c, err := New(sets...)
		if err != nil {
			t.Fatal(err)
		}
		return c.Version()
	}
	base := version()
	va, va2, vb := version(parse(a)), version(parse(a2)), version(parse(b))
	if !strings.HasPrefix(va, base+"+user.") {
		t.Errorf("version with user rules %q does not extend %q", va, base)
	}
	if va != va2 {
		t.Errorf("the same rules gave versions %q and %q", va, va2)
	}
	if va == vb {
		t.Errorf("different rules gave the same version %q", va)
	}
	if v := version(parse(a), parse(b)); v == va || v == vb {
		t.Errorf("two sets gave version %q, the same as one of them", v)
	}
	if v := version(parse("version: 1\n")); v != base {
		t.Errorf("an empty rule set changed the version to %q", v)
	}
}

func TestParseRulesErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []string // each must appear in the error text
	}{
		{"bad YAML at a known line", "version: 1\nrules:\n  - id: x\n    match: {text: [a]\n  - id: y\n",
			[]string{"rules.yaml:4: did not find expected ',' or '}'"}},
		{"unknown category names the rule and suggests", "version: 1\nrules:\n  - id: ok1\n    match: {text: [a]}\n    category: OK\n  - id: x\n    match: {text: [b]}\n    category: RATE_LIMIT\n",
			[]string{`rules.yaml:8: rule "x": unknown category "RATE_LIMIT" (did you mean "RATE_LIMITED"?)`}},
		{"regex that does not compile", "version: 1\nrules:\n  - id: x\n    match:\n      regex: ['(foo']\n    category: INTERNAL\n",
			[]string{`rules.yaml:5: rule "x": regex "(foo" does not compile: missing closing ): ` + "`(foo`"}},
		{"message regex that does not compile", "version: 1\nrules:\n  - id: x\n    match:\n      jsonrpc_code: [-32602]\n      message: ['[a-']\n    category: INTERNAL\n",
			[]string{`rules.yaml:6: rule "x": message regex "[a-" does not compile`}},
		{"unknown field", "version: 1\nrules:\n  - id: x\n    match: {text: [a]}\n    categroy: INTERNAL\n",
			[]string{`rules.yaml:5: unknown field "categroy"`}},
		{"unknown field inside match", "version: 1\nrules:\n  - id: x\n    match: {texts: [a]}\n    category: INTERNAL\n",
			[]string{`rules.yaml:4: unknown field "texts"`}},
		{"duplicate key", "version: 1\nrules:\n  - id: x\n    id: y\n", []string{`rules.yaml:4: key "id" already set in map`}},
		{"missing version", "rules: []\n", []string{"rules.yaml: version is missing (want 1)"}},
		{"unsupported version", "version: 2\n", []string{"rules.yaml:1: version 2 is not supported (want 1)"}},
		{"JSON syntax error at a known line", "{\"version\": 1,\n \"rules\": [\n  {\"id\": \"x\",, \"category\": \"OK\"}]}",
			[]string{"rules.yaml:3: invalid JSON: invalid character ','"}},
		{"JSON unknown field", "{\"version\": 1,\n \"rules\": [\n  {\"id\": \"x\", \"match\": {\"text\": [\"a\"]}, \"category\": \"OK\", \"bogus\": 1}]}",
			[]string{`rules.yaml:3: unknown field "bogus"`}},
		{"wrong type", "version: 1\nrules:\n  - id: x\n    match: {jsonrpc_code: [\"abc\"]}\n    category: INTERNAL\n",
			[]string{"rules.yaml:4: rules.match.jsonrpc_code: got a JSON string, want int64"}},
		{"explicit code that is neither string nor number", "version: 1\nrules:\n  - id: x\n    match: {explicit_code: [{a: 1}]}\n    category: INTERNAL\n",
			[]string{`rules.yaml:4: explicit_code: {"a":1} is neither a string nor a number`}},
		{"every problem is reported", "version: 1\nrules:\n  - id: a\n    match: {text: [a], jsonrpc_code: [1]}\n    category: INTERNAL\n  - id: b\n    when: sometimes\n    stage: late\n    match: {}\n    category: nope\n",
			[]string{`rules.yaml:4: rule "a": match mixes kinds`, `rules.yaml:9: rule "b": match is empty`, `rules.yaml:10: rule "b": unknown category "nope"`,
				`rules.yaml:8: rule "b": unknown stage "late"`, `rules.yaml:7: rule "b": unknown when "sometimes"`}},
		{"duplicate id in one file", "version: 1\nrules:\n  - id: x\n    match: {text: [a]}\n    category: OK\n  - id: x\n    match: {text: [b]}\n    category: OK\n",
			[]string{`rules.yaml:6: rule "x": id is used by an earlier rule in this file`}},
		{"missing id", "version: 1\nrules:\n  - match: {text: [a]}\n    category: OK\n", []string{`rule "#1": id is missing`}},
		{"message without jsonrpc_code", "version: 1\nrules:\n  - id: x\n    match: {text: [a], message: [b]}\n    category: OK\n",
			[]string{`rules.yaml:4: rule "x": message applies only with jsonrpc_code`}},
		{"when on an explicit rule", "version: 1\nrules:\n  - id: x\n    when: success\n    match: {explicit_code: [A]}\n    category: OK\n",
			[]string{`rules.yaml:4: rule "x": when applies only to text matches`}},
		{"gate without when success", "version: 1\nrules:\n  - id: x\n    gate: true\n    match: {text: [a]}\n    category: INTERNAL\n",
			[]string{`rules.yaml:4: rule "x": gate needs a text match with when: success`}},
		{"retryable non-failure", "version: 1\nrules:\n  - id: x\n    match: {text: [a]}\n    category: EMPTY_RESULT\n    expected_retryable: true\n",
			[]string{`rules.yaml:6: rule "x": expected_retryable: true makes no sense for EMPTY_RESULT`}},
		{"blank pattern", "version: 1\nrules:\n  - id: x\n    match: {text: [' * ']}\n    category: OK\n", []string{`rule "x": text pattern " * " is blank`}},
		{"regex matching everything", "version: 1\nrules:\n  - id: x\n    match: {regex: ['a*']}\n    category: OK\n", []string{`rule "x": regex "a*" matches the empty string`}},
		{"bad language tag", "version: 1\nrules:\n  - id: x\n    match: {text: [a], lang: English}\n    category: OK\n", []string{`rule "x": lang "English" is not a language tag`}},
		{"retry override problems", "version: 1\nretry_overrides:\n  - server: kb\n    category: INTERNAL\n  - category: EMPTY_RESULT\n    expected_retryable: true\n  - category: TIMEOUT\n    expected_retryable: false\n",
			[]string{"rules.yaml:3: retry_overrides[0]: expected_retryable is missing", "rules.yaml:5: retry_overrides[1]: expected_retryable: true makes no sense",
				`rules.yaml:7: retry_overrides[2]: unknown category "TIMEOUT"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := ParseRules("rules.yaml", []byte(tt.file))
			if err == nil {
				t.Fatalf("ParseRules() = %d rules, nil error; want an error", len(rs.Rules))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ParseRules() error =\n%v\nwant it to contain\n%s", err, w)
				}
			}
		})
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "version: 1\nrules:\n  - id: kb.db_busy\n    server: kb\n    match: {text: [DB_BUSY]}\n    category: UNAVAILABLE\n")
	if err := Check(good); err != nil {
		t.Errorf("Check(good) = %v", err)
	}
	bad := write("bad.yaml", "version: 1\nrules:\n  - id: x\n    match: {text: [a]}\n    category: RATE_LIMIT\n")
	if err := Check(bad); err == nil || !strings.Contains(err.Error(), bad+`:5: rule "x": unknown category "RATE_LIMIT"`) {
		t.Errorf("Check(bad) = %v, want the path, line and reason", err)
	}
	orphan := write("orphan.yaml", "version: 1\nrules:\n  - id: no.such.rule\n    disabled: true\n")
	if err := Check(orphan); err == nil || !strings.Contains(err.Error(), `rule "no.such.rule" is disabled, but no earlier rule set defines it`) {
		t.Errorf("Check(orphan) = %v", err)
	}
	if err := Check(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "read rules: ") {
		t.Errorf("Check(missing) = %v", err)
	}
	if _, err := New(nil); err == nil {
		t.Error("New(nil) = nil error, want one")
	}
}

// TestSchemaMatchesFormat checks that rules.schema.json describes exactly
// the fields the decoder accepts.
func TestSchemaMatchesFormat(t *testing.T) {
	data, err := os.ReadFile("rules.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties  map[string]json.RawMessage `json:"properties"`
		Definitions map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatalf("rules.schema.json: %v", err)
	}
	fields := func(v any) []string {
		var names []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			if tag := rt.Field(i).Tag.Get("json"); tag != "" {
				names = append(names, strings.Split(tag, ",")[0])
			}
		}
		slices.Sort(names)
		return names
	}
	keys := func(m map[string]json.RawMessage) []string {
		var names []string
		for k := range m {
			names = append(names, k)
		}
		slices.Sort(names)
		return names
	}
	for name, pair := range map[string]struct {
		schema []string
		goType any
	}{
		"file":          {keys(schema.Properties), RuleSet{}},
		"rule":          {keys(schema.Definitions["rule"].Properties), Rule{}},
		"match":         {keys(schema.Definitions["match"].Properties), Match{}},
		"retryOverride": {keys(schema.Definitions["retryOverride"].Properties), RetryOverride{}},
	} {
		if want := fields(pair.goType); !slices.Equal(pair.schema, want) {
			t.Errorf("schema %s has properties %v, the decoder accepts %v", name, pair.schema, want)
		}
	}
}

// TestDocsExample parses the complete example in docs/rules.md, so the
// documentation cannot drift from the format, and checks that it does what
// its comments say.
func TestDocsExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, fence := range []string{"```yaml\n", "```json\n"} {
		_, rest, ok := strings.Cut(string(doc), fence)
		if !ok {
			t.Fatalf("docs/rules.md has no %q block", strings.TrimSpace(fence))
		}
		block, _, _ := strings.Cut(rest, "```")
		blocks = append(blocks, block)
	}
	var sets []*RuleSet
	for i, b := range blocks {
		rs, err := ParseRules("docs/rules.md example "+string(rune('1'+i)), []byte(b))
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, rs)
	}
	c, err := New(sets[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		in   *Input
		cat  Category
		exp  int8
		rule string
	}{
		{on(toolErr("DB_BUSY"), "kb", "search"), Unavailable, yes, "kb.db_busy"},
		{on(toolErrStruct("x", `{"errorCode":"db-busy"}`), "kb", "search"), Unavailable, yes, "kb.db_busy.code"},
		{on(rpcErr(-32002, "TOOL_TIMEOUT after 60s"), "cts-eu", "run"), UpstreamTimeout, yes, "cts.tool_timeout"},
		{on(toolErr("charge timed out"), "billing", "payments_charge"), UpstreamTimeout, no, "billing.payment_timeout"},
		{on(ok("索引重建中"), "kb", "search"), Unavailable, yes, "kb.reindexing"},
		{rpcErr(-32602, "closed for a maintenance window"), Unavailable, yes, "gateway.maintenance"},
		{rpcErr(-32800, "request interrupted"), UpstreamTimeout, yes, "jsonrpc.request_interrupted"},
		{ok("Document not found"), OK, no, "default.ok"},
		{on(toolErr("internal error"), "kb", "search"), Internal, no, "text.internal.en"},
		{on(toolErr("rate limit exceeded"), "legacy-1", "x"), RateLimited, no, "text.rate_limit.en"},
	} {
		got := c.Classify(tt.in)
		if got.Category != tt.cat || got.ExpectedRetryable != tt.exp || got.Rule != tt.rule {
			t.Errorf("%s/%s %q: got %s expected=%d rule=%s, want %s expected=%d rule=%s", tt.in.Server, tt.in.Tool,
				tt.in.Texts, got.Category, got.ExpectedRetryable, got.Rule, tt.cat, tt.exp, tt.rule)
		}
	}
}
