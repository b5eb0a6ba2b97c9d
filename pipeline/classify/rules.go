package classify

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"
)

// FormatVersion is the only rules file format version this package reads
// (the file's `version` field).
const FormatVersion = 1

// builtinRules is the built-in rule set, written in the same format users
// write (docs/rules.md).
//
//go:embed builtin_rules.yaml
var builtinRules []byte

// builtinSet parses the embedded rules once; every New starts from it.
var builtinSet = sync.OnceValues(func() (*RuleSet, error) {
	return ParseRules("builtin_rules.yaml", builtinRules)
})

// RuleSet is one parsed and validated rules file. It is immutable once
// ParseRules returns it and may be shared by any number of classifiers.
type RuleSet struct {
	// Version is the file format version; it must be FormatVersion.
	Version int `json:"version"`
	// Revision numbers successive editions of a file. The built-in set's
	// revision appears in Classifier.Version; user sets are identified
	// there by a hash of their content instead.
	Revision int `json:"revision,omitempty"`
	// Rules are the classification rules, in file order.
	Rules []Rule `json:"rules,omitempty"`
	// RetryOverrides change only the expected retryability of calls of a
	// category, per server and tool. The last matching override wins.
	RetryOverrides []RetryOverride `json:"retry_overrides,omitempty"`

	name     string
	compiled []*rule
	retry    []retryOverride
}

// Rule is one classification rule as written in a rules file. Match says
// what the rule looks for; the first rule that matches, in precedence
// order (stage, then priority, then file order), decides the category.
type Rule struct {
	// ID names the rule; it is stored with every call the rule decides. A
	// later rule set that reuses an ID replaces the earlier definition in
	// place (it keeps the earlier rule's position among equal priorities).
	ID string `json:"id"`
	// Description says why the rule exists. It is documentation only.
	Description string `json:"description,omitempty"`
	// Server and Tool scope the rule: an exact name or a glob where `*`
	// matches any run of characters and `?` one character. Empty means any.
	Server string `json:"server,omitempty"`
	Tool   string `json:"tool,omitempty"`
	// Stage places the rule in the precedence order: explicit, jsonrpc,
	// text or fallback. The default follows the match kind.
	Stage string `json:"stage,omitempty"`
	// Priority orders rules within a stage, higher first. At equal
	// priority, rules from later sets run before earlier sets (so user
	// rules run before built-in ones), then in file order.
	Priority int `json:"priority,omitempty"`
	// When restricts a text rule to calls that failed ("failure", the
	// default), to results that did not fail on the wire ("success"), or to
	// both ("any"). Only text rules take it.
	When string `json:"when,omitempty"`
	// Gate makes a success text rule a failure marker rather than a
	// decision: when it matches, the call is treated as failed and the
	// failure rules pick the category; the gate's own category applies
	// only when none of them matches. Gates need when: success.
	Gate bool `json:"gate,omitempty"`
	// Match is what the rule looks for.
	Match Match `json:"match"`
	// Category is the taxonomy category the rule assigns.
	Category Category `json:"category"`
	// ExpectedRetryable, when set, replaces the taxonomy's retry advice for
	// calls this rule decides.
	ExpectedRetryable *bool `json:"expected_retryable,omitempty"`
	// Disabled removes an earlier rule with the same ID.
	Disabled bool `json:"disabled,omitempty"`
}

// Match holds exactly one kind of condition: text (Text, Prefix, Regex),
// explicit codes (ExplicitCode) or JSON-RPC codes (JSONRPCCode, optionally
// with Message).
type Match struct {
	// Text lists substrings; English letters match case-insensitively. A
	// `*` stands for up to 40 bytes on the same line ("department * not
	// found"). A pattern that starts or ends with a digit matches only
	// where it is not part of a longer number ("429" does not match
	// "14290").
	Text []string `json:"text,omitempty"`
	// Prefix lists strings that must start a message or a text block
	// (after leading spaces and markdown markers).
	Prefix []string `json:"prefix,omitempty"`
	// Regex lists RE2 regular expressions, matched case-insensitively
	// against the lowercased text.
	Regex []string `json:"regex,omitempty"`
	// Lang tags the language of the patterns ("en", "zh", ...). It is
	// documentation only.
	Lang string `json:"lang,omitempty"`
	// MaxLen, when positive, makes a text rule apply only to messages of
	// at most that many bytes, so a long document that mentions "timeout"
	// is not read as a failure message.
	MaxLen int `json:"max_len,omitempty"`
	// ExplicitCode lists code values a server may put in structured error
	// fields (errorCode, code, error.code, status, reason, category).
	// Values compare case-insensitively ignoring `_`, `-`, `.`, spaces
	// and a trailing "Error"/"Exception", so rate-limited, RateLimited and
	// RATE_LIMITED are the same code. Numbers may be written as numbers.
	ExplicitCode Codes `json:"explicit_code,omitempty"`
	// JSONRPCCode lists JSON-RPC error codes. The code TypeScript SDK v1
	// embeds in isError text ("MCP error -32602: …") counts too.
	JSONRPCCode []int64 `json:"jsonrpc_code,omitempty"`
	// Message lists RE2 regular expressions of which one must match the
	// JSON-RPC error message (case-insensitive). Only with JSONRPCCode.
	Message []string `json:"message,omitempty"`
}

// Codes is a list of explicit code values. In a rules file each value may
// be a string or a number; numbers are kept in their decimal form.
type Codes []string

// UnmarshalJSON accepts a list of strings and numbers.
func (c *Codes) UnmarshalJSON(data []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("explicit_code: want a list of strings or numbers")
	}
	out := make(Codes, 0, len(raw))
	for _, r := range raw {
		var s string
		if err := json.Unmarshal(r, &s); err == nil {
			out = append(out, s)
			continue
		}
		var n json.Number
		if err := json.Unmarshal(r, &n); err != nil {
			return fmt.Errorf("explicit_code: %s is neither a string nor a number", r)
		}
		out = append(out, n.String())
	}
	*c = out
	return nil
}

// RetryOverride sets the expected retryability of one category for calls
// to matching servers and tools, whatever rule decided the category.
type RetryOverride struct {
	// Server and Tool scope the override like Rule.Server and Rule.Tool.
	Server string `json:"server,omitempty"`
	Tool   string `json:"tool,omitempty"`
	// Category is the category to override; empty means every failure
	// category.
	Category Category `json:"category,omitempty"`
	// ExpectedRetryable is the new advice. It is required.
	ExpectedRetryable *bool `json:"expected_retryable"`
}

// RuleError is one problem found in a rules file. ParseRules returns all
// problems it finds, joined with errors.Join.
type RuleError struct {
	File   string // the name given to ParseRules, or the path given to LoadRules
	Line   int    // 1-based; 0 when it cannot be determined
	Rule   string // the rule id, or "" for problems outside a rule
	Reason string
}

// Error formats the problem as `file:line: rule "id": reason`.
func (e *RuleError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Rule != "" {
		fmt.Fprintf(&b, "rule %q: ", e.Rule)
	}
	b.WriteString(e.Reason)
	return b.String()
}

// LoadRules reads and parses the rules file at path (YAML or JSON). Errors
// name the path and, where it can be determined, the line.
func LoadRules(path string) (*RuleSet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read rules: %w", err)
	}
	return ParseRules(path, data)
}

// Check loads the rules file at path and builds a classifier from the
// built-in rules plus that file, as `ingest rules check FILE` does. It
// returns nil when the file would be accepted at startup.
func Check(path string) error {
	rs, err := LoadRules(path)
	if err != nil {
		return err
	}
	_, err = New(rs)
	return err
}

// ParseRules parses a rules file. name is used in error messages (usually
// the file name). data may be YAML or JSON; decoding is strict: unknown
// fields, duplicate keys, unknown categories, stages or `when` values, and
// regular expressions that do not compile are errors. ParseRules reports
// every problem it finds.
func ParseRules(name string, data []byte) (*RuleSet, error) {
	src := source{name: name, data: data}
	jsonData := data
	if !looksLikeJSON(data) {
		var err error
		jsonData, err = yaml.YAMLToJSONStrict(data)
		if err != nil {
			return nil, src.yamlError(err)
		}
	}
	rs := &RuleSet{name: name}
	dec := json.NewDecoder(bytes.NewReader(jsonData))
	dec.DisallowUnknownFields()
	if err := dec.Decode(rs); err != nil {
		return nil, src.decodeError(err, looksLikeJSON(data))
	}
	if dec.More() {
		return nil, &RuleError{File: name, Reason: "more than one document; a rules file holds one"}
	}
	if err := rs.compile(src); err != nil {
		return nil, err
	}
	return rs, nil
}

// hash identifies the set's content (not its formatting): the first 8 hex
// digits of the SHA-256 of its canonical JSON.
func (rs *RuleSet) hash() string {
	b, err := json.Marshal(rs)
	if err != nil {
		// RuleSet holds only strings, numbers and bools; Marshal cannot fail.
		panic(fmt.Sprintf("classify: marshal rule set: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:4])
}

func looksLikeJSON(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n\ufeff")
	return len(t) > 0 && t[0] == '{'
}

// compile validates every rule and override and prepares them for New.
func (rs *RuleSet) compile(src source) error {
	var errs []error
	if rs.Version != FormatVersion {
		line := src.lineOf(src.locate(0, "version", ""))
		reason := fmt.Sprintf("version %d is not supported (want %d)", rs.Version, FormatVersion)
		if rs.Version == 0 {
			reason = fmt.Sprintf("version is missing (want %d)", FormatVersion)
		}
		errs = append(errs, &RuleError{File: src.name, Line: line, Reason: reason})
	}
	if rs.Revision < 0 {
		errs = append(errs, &RuleError{File: src.name, Line: src.lineOf(src.locate(0, "revision", "")),
			Reason: "revision must not be negative"})
	}
	// starts[i] is the offset of rule i's id key, -1 when not found; a
	// field of rule i is looked for between starts[i] and starts[i+1].
	starts := make([]int, len(rs.Rules)+1)
	from := 0
	for i := range rs.Rules {
		starts[i] = src.locate(from, "id", rs.Rules[i].ID)
		if starts[i] >= 0 {
			from = starts[i] + 1
		}
	}
	starts[len(rs.Rules)] = -1
	seen := map[string]bool{}
	for i := range rs.Rules {
		r := &rs.Rules[i]
		at, end := starts[i], starts[i+1]
		fail := func(field, format string, args ...any) {
			line := src.lineOf(at)
			if field != "" && at >= 0 {
				if f := src.locate(at, field, ""); f >= 0 && (end < 0 || f < end) {
					line = src.lineOf(f)
				}
			}
			id := r.ID
			if id == "" {
				id = fmt.Sprintf("#%d", i+1)
			}
			errs = append(errs, &RuleError{File: src.name, Line: line, Rule: id, Reason: fmt.Sprintf(format, args...)})
		}
		switch {
		case r.ID == "":
			fail("", "id is missing")
		case seen[r.ID]:
			fail("", "id is used by an earlier rule in this file")
		case strings.ContainsAny(r.ID, " \t\r\n"):
			fail("", "id must not contain white space")
		}
		seen[r.ID] = true
		if r.Disabled {
			rs.compiled = append(rs.compiled, &rule{id: r.ID, disabled: true})
			continue
		}
		c, problems := compileRule(r)
		for _, p := range problems {
			fail(p.field, "%s", p.reason)
		}
		if len(problems) == 0 {
			rs.compiled = append(rs.compiled, c)
		}
	}
	items := src.listItems("retry_overrides")
	for i, o := range rs.RetryOverrides {
		line := 0
		if i < len(items) {
			line = items[i]
		}
		fail := func(format string, args ...any) {
			errs = append(errs, &RuleError{File: src.name, Line: line,
				Reason: fmt.Sprintf("retry_overrides[%d]: ", i) + fmt.Sprintf(format, args...)})
		}
		ro := retryOverride{category: o.Category}
		var bad bool
		if o.ExpectedRetryable == nil {
			fail("expected_retryable is missing")
			bad = true
		} else {
			ro.retry = boolRetry(*o.ExpectedRetryable)
		}
		if o.Category != "" && !validCategory(o.Category) {
			fail("%s", unknownCategory(o.Category))
			bad = true
		} else if o.ExpectedRetryable != nil && *o.ExpectedRetryable && o.Category != "" && !o.Category.Failure() {
			fail("expected_retryable: true makes no sense for %s, which is not a failure", o.Category)
			bad = true
		}
		var err error
		if ro.server, err = newGlob(o.Server); err != nil {
			fail("server: %v", err)
			bad = true
		}
		if ro.tool, err = newGlob(o.Tool); err != nil {
			fail("tool: %v", err)
			bad = true
		}
		if !bad {
			rs.retry = append(rs.retry, ro)
		}
	}
	return errors.Join(errs...)
}

type problem struct {
	field  string // the key to point the line at, "" for the rule's line
	reason string
}

// compileRule checks one rule and builds its matcher.
func compileRule(r *Rule) (*rule, []problem) {
	var ps []problem
	add := func(field, format string, args ...any) {
		ps = append(ps, problem{field, fmt.Sprintf(format, args...)})
	}
	c := &rule{id: r.ID, category: r.Category, priority: r.Priority, retry: RetryUnknown, gate: r.Gate}
	m := &r.Match

	kinds := 0
	hasText := len(m.Text)+len(m.Prefix)+len(m.Regex) > 0
	if hasText {
		kinds++
		c.kind = kindText
	}
	if len(m.ExplicitCode) > 0 {
		kinds++
		c.kind = kindExplicit
	}
	if len(m.JSONRPCCode) > 0 {
		kinds++
		c.kind = kindJSONRPC
	}
	switch {
	case kinds == 0:
		add("match", "match is empty: give one of text/prefix/regex, explicit_code or jsonrpc_code")
	case kinds > 1:
		add("match", "match mixes kinds: give only one of text/prefix/regex, explicit_code or jsonrpc_code")
	}
	if len(m.Message) > 0 && c.kind != kindJSONRPC {
		add("message", "message applies only with jsonrpc_code")
	}
	if m.Lang != "" && !langTag.MatchString(m.Lang) {
		add("lang", "lang %q is not a language tag such as en or zh", m.Lang)
	}
	if m.MaxLen < 0 {
		add("max_len", "max_len must not be negative")
	}
	if (m.MaxLen > 0 || m.Lang != "") && kinds == 1 && c.kind != kindText {
		add("match", "lang and max_len apply only to text matches")
	}
	c.maxLen = m.MaxLen

	if !validCategory(r.Category) {
		add("category", "%s", unknownCategory(r.Category))
	}
	if r.ExpectedRetryable != nil {
		c.retry = boolRetry(*r.ExpectedRetryable)
		if *r.ExpectedRetryable && validCategory(r.Category) && !r.Category.Failure() {
			add("expected_retryable", "expected_retryable: true makes no sense for %s, which is not a failure", r.Category)
		}
	}

	switch r.Stage {
	case "":
		switch c.kind {
		case kindExplicit:
			c.stage = stageExplicit
		case kindJSONRPC:
			c.stage = stageJSONRPC
		default:
			c.stage = stageText
		}
	case "explicit":
		c.stage = stageExplicit
	case "jsonrpc":
		c.stage = stageJSONRPC
	case "text":
		c.stage = stageText
	case "fallback":
		c.stage = stageFallback
	default:
		add("stage", "unknown stage %q (want explicit, jsonrpc, text or fallback)", r.Stage)
	}

	switch r.When {
	case "":
		c.when = whenFailure
	case "failure":
		c.when = whenFailure
	case "success":
		c.when = whenSuccess
	case "any":
		c.when = whenAny
	default:
		add("when", "unknown when %q (want failure, success or any)", r.When)
	}
	if r.When != "" && c.kind != kindText && kinds == 1 {
		add("when", "when applies only to text matches")
	}
	if r.Gate {
		if c.kind != kindText || c.when != whenSuccess {
			add("gate", "gate needs a text match with when: success")
		}
		if c.stage != stageText {
			add("gate", "gate rules must be in the text stage")
		}
	}

	var err error
	if c.server, err = newGlob(r.Server); err != nil {
		add("server", "server: %v", err)
	}
	if c.tool, err = newGlob(r.Tool); err != nil {
		add("tool", "tool: %v", err)
	}

	for _, t := range m.Text {
		if strings.Trim(t, " \t\r\n*") == "" {
			add("text", "text pattern %q is blank", t)
			continue
		}
		c.texts = append(c.texts, lowerASCII(t))
	}
	for _, p := range m.Prefix {
		if strings.TrimSpace(p) == "" {
			add("prefix", "prefix %q is blank", p)
			continue
		}
		lp := lowerASCII(strings.TrimLeft(p, " \t\r\n"))
		c.prefixes = append(c.prefixes, lp)
		if c.prefixFirst == nil {
			c.prefixFirst = new([256]bool)
		}
		c.prefixFirst[lp[0]] = true
	}
	for _, s := range m.Regex {
		re, err := compileFold(s)
		if err != nil {
			add("regex", "regex %q does not compile: %v", s, err)
			continue
		}
		if re.MatchString("") {
			add("regex", "regex %q matches the empty string, so it would match every message", s)
			continue
		}
		c.regexes = append(c.regexes, newFoldRegexp(re))
	}
	for _, s := range m.Message {
		re, err := compileFold(s)
		if err != nil {
			add("message", "message regex %q does not compile: %v", s, err)
			continue
		}
		c.message = append(c.message, newFoldRegexp(re))
	}
	for _, code := range m.ExplicitCode {
		n := normalizeCode(code)
		if n == "" {
			add("explicit_code", "explicit code %q is empty once normalized", code)
			continue
		}
		if c.codes == nil {
			c.codes = map[string]bool{}
		}
		c.codes[n] = true
	}
	c.rpcCodes = slices.Clone(m.JSONRPCCode)
	return c, ps
}

var langTag = regexp.MustCompile(`^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$`)

// compileFold compiles a case-insensitive regex. Errors name the
// expression as the user wrote it, without the package's prefix.
func compileFold(s string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(s); err != nil {
		msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
		return nil, errors.New(msg)
	}
	return regexp.Compile("(?i)" + s)
}

func validCategory(c Category) bool { return slices.Contains(Categories, c) }

func unknownCategory(c Category) string {
	if c == "" {
		return "category is missing"
	}
	msg := fmt.Sprintf("unknown category %q", string(c))
	best, bestD := Category(""), max(1, len(c)/4)+1
	for _, k := range Categories {
		if d := editDistance(strings.ToUpper(string(c)), string(k)); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", string(best))
	}
	return msg
}

// editDistance is the Levenshtein distance; it only ranks typo suggestions.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func boolRetry(b bool) int8 {
	if b {
		return RetryYes
	}
	return RetryNo
}

// source locates keys in the raw file so errors can name a line.
type source struct {
	name string
	data []byte
}

// lineOf returns the 1-based line of byte offset off, or 0 when off < 0.
func (s source) lineOf(off int) int {
	if off < 0 || off > len(s.data) {
		return 0
	}
	return bytes.Count(s.data[:off], []byte{'\n'}) + 1
}

// locate returns the offset of the first occurrence at or after from of
// key used as a mapping key (YAML `key:` or JSON `"key":`) whose value
// starts with value (when value is not empty), or -1.
func (s source) locate(from int, key, value string) int {
	d := s.data
	for i := max(from, 0); i < len(d); {
		j := bytes.Index(d[i:], []byte(key))
		if j < 0 {
			return -1
		}
		at := i + j
		i = at + 1
		before, after := at, at+len(key)
		quoted := before > 0 && (d[before-1] == '"' || d[before-1] == '\'')
		if quoted {
			before--
			if after >= len(d) || d[after] != d[before] {
				continue
			}
			after++
		}
		if before > 0 && !bytes.ContainsAny(d[before-1:before], " \t\n-{,") {
			continue
		}
		k := after
		for k < len(d) && (d[k] == ' ' || d[k] == '\t') {
			k++
		}
		if k >= len(d) || d[k] != ':' {
			continue
		}
		if value == "" {
			return before
		}
		k++
		for k < len(d) && (d[k] == ' ' || d[k] == '\t' || d[k] == '"' || d[k] == '\'') {
			k++
		}
		if bytes.HasPrefix(d[k:], []byte(value)) {
			if e := k + len(value); e == len(d) || bytes.ContainsAny(d[e:e+1], " \t\r\n\"',}#") {
				return before
			}
		}
	}
	return -1
}

// locateOnly is locate for a key that must occur exactly once in the
// file; otherwise the line cannot be told and it returns -1.
func (s source) locateOnly(key string) int {
	at := s.locate(0, key, "")
	if at < 0 || s.locate(at+1, key, "") >= 0 {
		return -1
	}
	return at
}

// listItems returns the lines of the items of the YAML block list under
// key, or the key's line for every item when the list is not in block
// style (JSON, flow style).
func (s source) listItems(key string) []int {
	at := s.locate(0, key, "")
	if at < 0 {
		return nil
	}
	keyLine := s.lineOf(at)
	lines := strings.Split(string(s.data), "\n")
	var items []int
	indent := -1
	for i := keyLine; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimLeft(l, " ")
		if t == "" || t[0] == '#' {
			continue
		}
		n := len(l) - len(t)
		if indent < 0 {
			if !strings.HasPrefix(t, "- ") && t != "-" {
				break
			}
			indent = n
		}
		if n < indent || n == indent && !strings.HasPrefix(t, "-") {
			break
		}
		if n == indent {
			items = append(items, i+1)
		}
	}
	if len(items) == 0 {
		for range strings.Count(string(s.data), "expected_retryable") {
			items = append(items, keyLine)
		}
	}
	return items
}

var yamlLine = regexp.MustCompile(`line (\d+): `)

// yamlError turns a YAML syntax error into a RuleError with its line.
func (s source) yamlError(err error) error {
	msg := strings.TrimSpace(err.Error())
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:")
	msg = strings.TrimPrefix(strings.TrimSpace(msg), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatchIndex(msg); m != nil {
		line, _ = strconv.Atoi(msg[m[2]:m[3]])
		msg = msg[:m[0]] + msg[m[1]:]
	}
	return &RuleError{File: s.name, Line: line, Reason: strings.TrimSpace(msg)}
}

var unknownField = regexp.MustCompile(`unknown field "([^"]+)"`)

// decodeError turns a JSON decoding error into a RuleError, finding the
// line where the raw file allows it.
func (s source) decodeError(err error, isJSON bool) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line := 0
		if isJSON {
			line = s.lineOf(int(syn.Offset))
		}
		return &RuleError{File: s.name, Line: line, Reason: "invalid JSON: " + syn.Error()}
	case errors.As(err, &typ):
		line := 0
		field := typ.Field
		if isJSON {
			line = s.lineOf(int(typ.Offset))
		} else if k := field[strings.LastIndexByte(field, '.')+1:]; k != "" {
			line = s.lineOf(s.locateOnly(k))
		}
		return &RuleError{File: s.name, Line: line,
			Reason: fmt.Sprintf("%s: got a JSON %s, want %s", field, typ.Value, typ.Type)}
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "explicit_code: ") {
		return &RuleError{File: s.name, Line: s.lineOf(s.locateOnly("explicit_code")), Reason: msg}
	}
	if m := unknownField.FindStringSubmatch(msg); m != nil {
		return &RuleError{File: s.name, Line: s.lineOf(s.locate(0, m[1], "")),
			Reason: fmt.Sprintf("unknown field %q", m[1])}
	}
	return &RuleError{File: s.name, Reason: strings.TrimPrefix(msg, "json: ")}
}
