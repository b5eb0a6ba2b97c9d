package classify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// TaxonomyVersion names the category set and its semantics
// (docs/taxonomy.md). It leads every Classifier.Version.
const TaxonomyVersion = "v1"

// Stages, in precedence order.
type stage uint8

const (
	stageExplicit stage = iota
	stageJSONRPC
	stageText
	stageFallback
	numStages
)

// Match kinds; each is also a bit of the per-call activity mask.
type kind uint8

const (
	kindExplicit kind = iota
	kindJSONRPC
	kindText
)

type whenKind uint8

const (
	whenFailure whenKind = iota
	whenSuccess
	whenAny
)

// rule is a compiled Rule.
type rule struct {
	id          string
	disabled    bool
	kind        kind
	stage       stage
	priority    int
	when        whenKind
	gate        bool
	server      glob
	tool        glob
	category    Category
	retry       int8 // RetryUnknown when the rule does not override
	texts       []string
	prefixes    []string
	prefixFirst *[256]bool // first bytes of prefixes
	regexes     []foldRegexp
	maxLen      int
	codes       map[string]bool
	rpcCodes    []int64
	message     []foldRegexp
}

func (r *rule) inScope(in *Input) bool {
	return r.server.match(in.Server) && r.tool.match(in.Tool)
}

type retryOverride struct {
	server, tool glob
	category     Category
	retry        int8
}

// Classifier classifies tools/call outcomes with a fixed set of rules. It
// is immutable after New and safe for concurrent use; use it through the
// pointer New or Default returns (it must not be copied).
type Classifier struct {
	rules []*rule // in precedence order
	// lists[stage][mask] holds the indexes of the stage's rules whose kind
	// bit is set in mask, in order, so a call skips kinds it cannot match.
	lists [numStages][8][]int32
	full  []tier // substring patterns of every text rule
	head  []tier // substring patterns of text rules that apply to successes, by message length
	words int    // uint64 words in a rule bit set
	// Above prefixOnly bytes (0: never) no success text rule but prefix
	// rules can match, so a head view keeps only prefixScan bytes a block.
	prefixOnly int
	prefixScan int
	retry      []retryOverride
	version    string
	pool       sync.Pool // *scratch
}

type scratch struct {
	buf  []byte
	bits []uint64
}

// Default returns the classifier with only the built-in rules. Every call
// returns the same classifier. It panics if the embedded rules are broken,
// which the package tests rule out.
func Default() *Classifier {
	c, err := defaultClassifier()
	if err != nil {
		panic(fmt.Sprintf("classify: built-in rules: %v", err))
	}
	return c
}

var defaultClassifier = sync.OnceValues(func() (*Classifier, error) { return New() })

// New builds a classifier from the built-in rules with sets applied on top
// in order: a rule whose ID is already defined replaces that definition in
// place, a disabled rule removes it, and a new ID adds a rule. Retry
// overrides of all sets apply in order, the last match winning. New fails
// when a set is nil or disables a rule that no earlier set defines. It
// compiles everything Classify needs, so Classify does no setup per call.
func New(sets ...*RuleSet) (*Classifier, error) {
	base, err := builtinSet()
	if err != nil {
		return nil, fmt.Errorf("built-in rules: %w", err)
	}
	type entry struct {
		r          *rule
		layer, pos int
	}
	var entries []entry
	index := map[string]int{}
	c := &Classifier{}
	var hashes []string
	for layer, rs := range slices.Concat([]*RuleSet{base}, sets) {
		if rs == nil {
			return nil, fmt.Errorf("rule set %d is nil", layer)
		}
		for pos, r := range rs.compiled {
			i, ok := index[r.id]
			switch {
			case r.disabled && !ok:
				return nil, fmt.Errorf("%s: rule %q is disabled, but no earlier rule set defines it", rs.name, r.id)
			case r.disabled:
				entries[i].r = nil
				delete(index, r.id)
			case ok:
				entries[i].r = r
			default:
				index[r.id] = len(entries)
				entries = append(entries, entry{r, layer, pos})
			}
		}
		c.retry = append(c.retry, rs.retry...)
		if layer > 0 && (len(rs.Rules) > 0 || len(rs.RetryOverrides) > 0) {
			hashes = append(hashes, rs.hash())
		}
	}
	entries = slices.DeleteFunc(entries, func(e entry) bool { return e.r == nil })
	slices.SortStableFunc(entries, func(a, b entry) int {
		switch {
		case a.r.stage != b.r.stage:
			return int(a.r.stage) - int(b.r.stage)
		case a.r.priority != b.r.priority:
			return b.r.priority - a.r.priority
		case a.layer != b.layer:
			return b.layer - a.layer
		}
		return a.pos - b.pos
	})
	for _, e := range entries {
		c.rules = append(c.rules, e.r)
	}
	c.words = (len(c.rules) + 63) / 64
	for i, r := range c.rules {
		for mask := range 8 {
			if mask&(1<<r.kind) != 0 {
				c.lists[r.stage][mask] = append(c.lists[r.stage][mask], int32(i))
			}
		}
	}
	c.full = buildTiers(c.rules, func(r *rule) bool { return true }, false)
	c.head = buildTiers(c.rules, func(r *rule) bool { return r.when != whenFailure }, true)
	if last := c.head[len(c.head)-1]; len(c.head) > 1 && len(last.a.pats) == 0 {
		c.prefixOnly = c.head[0].limit
		for _, r := range c.rules {
			if r.kind == kindText && r.when != whenFailure && r.maxLen == 0 && len(r.regexes) > 0 {
				c.prefixOnly = 0
			}
			for _, p := range r.prefixes {
				c.prefixScan = max(c.prefixScan, len(p)+64)
			}
		}
	}
	c.version = TaxonomyVersion + "+builtin." + strconv.Itoa(base.Revision)
	if len(hashes) > 0 {
		c.version += "+user." + hashStrings(hashes)
	}
	c.pool.New = func() any {
		return &scratch{buf: make([]byte, 0, 1024), bits: make([]uint64, c.words)}
	}
	return c, nil
}

// hashStrings combines the hashes of several rule sets into one.
func hashStrings(hs []string) string {
	if len(hs) == 1 {
		return hs[0]
	}
	sum := sha256.Sum256([]byte(strings.Join(hs, ",")))
	return hex.EncodeToString(sum[:4])
}

// Version identifies the taxonomy and the rules, e.g. "v1+builtin.3", or
// "v1+builtin.3+user.1a2b3c4d" when user rule sets were given (a hash of
// their content), so rows classified under different rules can be told
// apart.
func (c *Classifier) Version() string { return c.version }

// call is the state of one Classify call.
type call struct {
	c        *Classifier
	in       Input // a copy, so that the caller's Input does not escape
	ex       explicitInfo
	isErr    bool // isError: true
	noResp   bool
	wireFail bool // no response, JSON-RPC error or isError: true
	failCtx  bool // wireFail, an explicit error flag, or a gate matched
	rpc      bool // a JSON-RPC code is known (envelope or embedded in text)
	rpcCode  int64
	rpcMsg   string
	embedded bool
	mask     int
	// texts[i] says how text block i is read: 0 content, 1 blank,
	// 2 mirror of structuredContent, 3 parsed as a JSON payload.
	texts    [maxBlocks]uint8
	ntexts   int
	content  int // non-blank text blocks that are neither mirrors nor parsed
	structE  int8
	jsonE    int8
	jsonText bool
	sc       *scratch
	v        view
	built    int8 // 0 none, 1 head, 2 full
	gate     *rule
}

const (
	textContent uint8 = iota
	textBlank
	textMirror
	textJSON
)

// Classify returns the verdict for one call. It is a pure function of in
// and the classifier's rules, safe for concurrent use, and never panics:
// a nil input is UNCLASSIFIED with rule "default.nil_input".
func (c *Classifier) Classify(in *Input) (res Result) {
	defer func() {
		if recover() != nil {
			// Unreachable by design; the fuzz test checks that this rule
			// never shows up.
			res = Result{Category: Unclassified, IsFailure: true, DeclaredRetryable: RetryUnknown,
				ExpectedRetryable: Unclassified.ExpectedRetryable(), Source: SourceDefault, Rule: "default.recovered"}
		}
	}()
	if in == nil {
		return Result{Category: Unclassified, IsFailure: true, DeclaredRetryable: RetryUnknown,
			ExpectedRetryable: Unclassified.ExpectedRetryable(), Source: SourceDefault, Rule: "default.nil_input"}
	}
	k := call{c: c, in: *in}
	k.ex.retry = RetryUnknown
	defer k.release()
	if in.HasResponse && !in.RPCError && in.ResultType == "input_required" {
		res = k.finish(OK, SourceJSONRPC, "protocol.input_required", nil)
		res.InputRequired = true
		return res
	}
	k.init()
	return k.decide()
}

func (k *call) release() {
	if k.sc != nil {
		k.c.pool.Put(k.sc)
	}
}

func (k *call) init() {
	in := &k.in
	k.isErr = in.IsError > 0
	k.noResp = !in.HasResponse
	k.wireFail = k.noResp || in.RPCError || k.isErr
	k.structE, k.jsonE = emptyUnknown, emptyUnknown
	if in.RPCError {
		k.rpc, k.rpcCode, k.rpcMsg = true, in.RPCCode, in.RPCMessage
	}
	hasStruct := len(in.Structured) > 0
	if hasStruct {
		k.structE = k.ex.analyze(in.Structured, fromStructured)
	}
	if len(in.ResultMeta) > 0 {
		k.ex.analyze(in.ResultMeta, fromMeta)
	}
	if len(in.ErrorData) > 0 {
		k.ex.analyze(in.ErrorData, fromErrorData)
	}
	k.ntexts = min(len(in.Texts), maxBlocks)
	var structTrim []byte
	if hasStruct {
		structTrim = bytes.TrimSpace(in.Structured)
	}
	for i, t := range in.Texts[:k.ntexts] {
		switch {
		case isBlank(t):
			k.texts[i] = textBlank
		case hasStruct && (jsonLike(t) || strings.TrimSpace(t) == string(structTrim)):
			k.texts[i] = textMirror
		case !hasStruct && !k.jsonText && jsonLike(t):
			// Servers without structuredContent often return JSON text:
			// read the first such block as the payload.
			k.texts[i] = textJSON
			k.jsonText = true
			k.jsonE = k.ex.analyze(stringBytes(t), fromStructured)
		default:
			k.texts[i] = textContent
			k.content++
		}
	}
	if len(in.Texts) > k.ntexts {
		k.content += len(in.Texts) - k.ntexts
	}
	// TypeScript SDK v1 reports protocol errors inside isError text as
	// "MCP error <code>: <message>".
	if k.isErr && !in.RPCError {
		for i, t := range in.Texts[:k.ntexts] {
			if k.texts[i] != textContent {
				continue
			}
			if code, msg, ok := embeddedCode(t); ok {
				k.rpc, k.rpcCode, k.rpcMsg, k.embedded = true, code, msg, true
			}
			break
		}
	}
	k.failCtx = k.wireFail || k.ex.flag
	if k.ex.nc > 0 {
		k.mask |= 1 << kindExplicit
	}
	if k.rpc {
		k.mask |= 1 << kindJSONRPC
	}
	if in.RPCMessage != "" || in.LocalError != "" || k.content > 0 || k.ex.nm > 0 || k.ex.nt > 0 || k.failCtx && k.ntexts > 0 {
		k.mask |= 1 << kindText
	}
}

// noResponse classifies a call that got no answer. The capture format
// defines it as UNAVAILABLE (client timeout or transport failure), whatever
// the client's local error says, except a cancellation by the client or user,
// which is not a failure. A local error that matched a text rule names that
// rule, so the record still says whether it was a timeout or a reset.
func (k *call) noResponse() Result {
	for _, st := range []stage{stageJSONRPC, stageText, stageFallback} {
		if r := k.walk(k.c.lists[st][k.mask]); r != nil {
			if r.category == Cancelled {
				return k.finish(Cancelled, sourceOf(r), r.id, r)
			}
			return k.finish(Unavailable, sourceOf(r), r.id, nil)
		}
	}
	return k.finish(Unavailable, SourceDefault, "default.no_response", nil)
}

// stringBytes returns the bytes of s without copying. The scanner only
// reads them; nothing may write to the result.
func stringBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// jsonLike reports whether s looks like a JSON object or array.
func jsonLike(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) >= 2 && (s[0] == '{' && s[len(s)-1] == '}' || s[0] == '[' && s[len(s)-1] == ']')
}

// embeddedCode parses "MCP error -32602: Tool x not found".
func embeddedCode(t string) (code int64, msg string, ok bool) {
	t = strings.TrimLeft(t, " \t\r\n")
	const p = "MCP error "
	if !strings.HasPrefix(t, p) {
		return 0, "", false
	}
	rest := t[len(p):]
	colon := strings.IndexByte(rest, ':')
	if colon <= 0 || colon > 21 {
		return 0, "", false
	}
	code, err := strconv.ParseInt(rest[:colon], 10, 64)
	if err != nil {
		return 0, "", false
	}
	return code, strings.TrimSpace(rest[colon+1:]), true
}

func (k *call) decide() Result {
	c := k.c
	if k.noResp {
		return k.noResponse()
	}
	// 1. Explicit structured fields.
	if r := k.explicitStage(); r != nil {
		return k.finish(r.category, sourceOf(r), r.id, r)
	}
	if k.unknownCode() {
		return k.finish(Unclassified, SourceExplicit, "explicit.unknown_code", nil)
	}
	// 2. JSON-RPC codes.
	if r := k.walk(c.lists[stageJSONRPC][k.mask]); r != nil {
		return k.finish(r.category, sourceOf(r), r.id, r)
	}
	// 3. Text, with gates re-running the stage as a failure.
	if r := k.walk(c.lists[stageText][k.mask]); r != nil {
		return k.finish(r.category, sourceOf(r), r.id, r)
	}
	// 4. Fallback: codes whose meaning the text may refine.
	if r := k.walk(c.lists[stageFallback][k.mask]); r != nil {
		return k.finish(r.category, sourceOf(r), r.id, r)
	}
	if k.rpc {
		return k.finish(Unclassified, SourceJSONRPC, "jsonrpc.unknown_code", nil)
	}
	if k.gate != nil {
		return k.finish(k.gate.category, SourceText, k.gate.id, k.gate)
	}
	if k.ex.flag {
		return k.finish(Unclassified, SourceExplicit, "explicit.error_flag", nil)
	}
	// 5. Defaults.
	if k.wireFail {
		return k.finish(Unclassified, SourceDefault, "default.failure", nil)
	}
	// 6. Empty results. A text block that mirrors structuredContent is
	// not content of its own; an image or resource block is.
	if k.otherBlocks() == 0 {
		switch {
		case len(k.in.Structured) > 0:
			if k.structE == emptyYes {
				return k.finish(EmptyResult, SourceExplicit, "empty.structured", nil)
			}
		case k.content > 0:
		case k.jsonText:
			if k.jsonE == emptyYes {
				return k.finish(EmptyResult, SourceExplicit, "empty.json_text", nil)
			}
		case k.ntexts > 0:
			return k.finish(EmptyResult, SourceDefault, "empty.blank_text", nil)
		case k.in.ContentBlocks == 0:
			return k.finish(EmptyResult, SourceDefault, "empty.no_content", nil)
		}
	}
	return k.finish(OK, SourceDefault, "default.ok", nil)
}

// otherBlocks counts content blocks that are not text (images, resources).
func (k *call) otherBlocks() int {
	if n := k.in.ContentBlocks - len(k.in.Texts); n > 0 {
		return n
	}
	return 0
}

func sourceOf(r *rule) string {
	switch r.kind {
	case kindExplicit:
		return SourceExplicit
	case kindJSONRPC:
		return SourceJSONRPC
	}
	return SourceText
}

// usable reports whether candidate cd counts in this call: a status value
// counts only in an error context.
func (k *call) usable(cd *cand) bool {
	return !cd.status || cd.inError || k.failCtx
}

// explicitStage tries every usable code, in key precedence order, against
// the explicit_code rules of the stage, then runs the stage's other rules.
func (k *call) explicitStage() *rule {
	list := k.c.lists[stageExplicit][k.mask]
	for i := 0; i < k.ex.nc; i++ {
		cd := &k.ex.cands[i]
		if !k.usable(cd) {
			continue
		}
		for _, ri := range list {
			r := k.c.rules[ri]
			if r.kind == kindExplicit && r.codes[string(cd.normalized())] && r.inScope(&k.in) {
				return r
			}
		}
	}
	var rest []int32
	for i, ri := range list {
		if k.c.rules[ri].kind != kindExplicit {
			rest = list[i:]
			break
		}
	}
	return k.walk(rest)
}

// unknownCode reports whether a strong code that no rule knows was found
// where it must be an error code (an errorCode key, an error object,
// error.data, or a call that failed). Such a call is UNCLASSIFIED: an
// unknown code is never mapped silently.
func (k *call) unknownCode() bool {
	for i := 0; i < k.ex.nc; i++ {
		cd := &k.ex.cands[i]
		if cd.strong && (cd.rank == 0 || cd.inError || k.failCtx) {
			return true
		}
	}
	return false
}

// primaryCode is the code stored in Result.ErrorCode: the first usable
// candidate in key precedence order.
func (k *call) primaryCode() *cand {
	for i := 0; i < k.ex.nc; i++ {
		if cd := &k.ex.cands[i]; k.usable(cd) {
			return cd
		}
	}
	return nil
}

// walk returns the first rule of list that matches. A gate that matches a
// result that did not fail turns the call into a failure and restarts the
// walk, so the failure rules pick the category.
func (k *call) walk(list []int32) *rule {
restart:
	for _, ri := range list {
		r := k.c.rules[ri]
		var ok bool
		switch r.kind {
		case kindExplicit:
			ok = k.matchExplicit(r)
		case kindJSONRPC:
			ok = k.matchJSONRPC(r)
		case kindText:
			ok = k.matchText(r, ri)
		}
		if !ok || !r.inScope(&k.in) {
			continue
		}
		if r.gate {
			k.gate = r
			k.failCtx = true
			goto restart
		}
		return r
	}
	return nil
}

func (k *call) matchExplicit(r *rule) bool {
	for i := 0; i < k.ex.nc; i++ {
		if cd := &k.ex.cands[i]; k.usable(cd) && r.codes[string(cd.normalized())] {
			return true
		}
	}
	return false
}

func (k *call) matchJSONRPC(r *rule) bool {
	if !k.rpc || !slices.Contains(r.rpcCodes, k.rpcCode) {
		return false
	}
	if len(r.message) == 0 {
		return true
	}
	for _, re := range r.message {
		if re.matchString(k.rpcMsg) {
			return true
		}
	}
	return false
}

func (k *call) matchText(r *rule, ri int32) bool {
	switch r.when {
	case whenFailure:
		if !k.failCtx {
			return false
		}
	case whenSuccess:
		if k.wireFail {
			return false
		}
	}
	if r.gate && k.failCtx {
		return false
	}
	v := k.view()
	if len(v.hay) == 0 || r.maxLen > 0 && v.msgLen > r.maxLen {
		return false
	}
	if k.sc.bits[ri>>6]&(1<<(ri&63)) != 0 {
		return true
	}
	if len(r.prefixes) > 0 && v.matchPrefix(r) {
		return true
	}
	for _, re := range r.regexes {
		if re.matchLower(v.hay) {
			return true
		}
	}
	return false
}

// view builds, once per mode, the text the text rules read: on a failure
// every message in full, otherwise the head of each content text block.
func (k *call) view() *view {
	want := int8(1)
	if k.failCtx {
		want = 2
	}
	if k.built == want {
		return &k.v
	}
	if k.sc == nil {
		k.sc = k.c.pool.Get().(*scratch)
	}
	clear(k.sc.bits)
	in := &k.in
	head := successHead
	if want == 1 && k.c.prefixOnly > 0 {
		n := 0
		for i, t := range in.Texts[:k.ntexts] {
			if k.texts[i] == textContent {
				n += len(t)
			}
		}
		for i := 0; i < k.ex.nt; i++ {
			n += len(k.ex.texts[i].raw)
		}
		if n > k.c.prefixOnly {
			head = min(head, k.c.prefixScan)
		}
	}
	k.v.reset(k.sc.buf, want == 2, head)
	if want == 2 && in.RPCError && !standardMessage(in.RPCMessage) {
		k.v.add(in.RPCMessage)
	}
	for i, t := range in.Texts[:k.ntexts] {
		// On a failure, JSON text is read as text too when no message
		// field was found in it.
		if k.texts[i] == textContent || want == 2 && k.ex.nm == 0 && (k.texts[i] == textJSON || k.texts[i] == textMirror) {
			k.v.add(t)
		}
	}
	for i := 0; i < k.ex.nt; i++ {
		k.v.addJSON(k.ex.texts[i].raw, k.ex.texts[i].esc)
	}
	if want == 2 {
		for i := 0; i < k.ex.nm; i++ {
			k.v.addJSON(k.ex.msgs[i].raw, k.ex.msgs[i].esc)
		}
		k.v.add(in.LocalError)
	}
	k.sc.buf = k.v.hay
	k.v.trimStarts()
	tiers := k.c.head
	if want == 2 {
		tiers = k.c.full
	}
	pick(tiers, k.v.msgLen).scan(k.v.hay, k.sc.bits)
	k.built = want
	return &k.v
}

// standardMessage reports whether msg is the JSON-RPC specification's
// name for a code ("Internal error", "Invalid params", …). It restates the
// code and is not read as text, so the code's rule decides.
func standardMessage(msg string) bool {
	msg = strings.TrimSpace(msg)
	for _, m := range [...]string{"parse error", "invalid request", "method not found", "invalid params", "internal error", "server error"} {
		if strings.EqualFold(msg, m) {
			return true
		}
	}
	return false
}

// finish fills in everything that follows from the category.
func (k *call) finish(cat Category, source, id string, r *rule) Result {
	in := &k.in
	res := Result{
		Category:          cat,
		IsFailure:         cat.Failure(),
		DeclaredRetryable: RetryUnknown,
		ExpectedRetryable: cat.ExpectedRetryable(),
		Source:            source,
		Rule:              id,
	}
	if r != nil && r.retry != RetryUnknown {
		res.ExpectedRetryable = r.retry
	}
	for _, o := range k.c.retry {
		if (o.category == cat || o.category == "" && res.IsFailure) && o.server.match(in.Server) && o.tool.match(in.Tool) {
			res.ExpectedRetryable = o.retry
		}
	}
	if k.failCtx || cat != OK {
		res.DeclaredRetryable = k.ex.retry
		res.RetryAfterMs = k.ex.retryAfterMs
		if res.DeclaredRetryable == RetryUnknown && res.RetryAfterMs > 0 {
			res.DeclaredRetryable = RetryYes
		}
		if cd := k.primaryCode(); cd != nil && (k.failCtx || res.IsFailure || source == SourceExplicit) {
			res.ErrorCode = string(cd.raw)
		} else if k.embedded {
			res.ErrorCode = strconv.FormatInt(k.rpcCode, 10)
		}
	}
	res.Misflagged = in.HasResponse && !in.RPCError && k.isErr != res.IsFailure
	if res.ErrorCode != "" && !utf8.ValidString(res.ErrorCode) {
		res.ErrorCode = strings.ToValidUTF8(res.ErrorCode, "\uFFFD")
	}
	return res
}

// glob matches a server or tool name: exact, or with `*` (any run of
// characters) and `?` (one character). The empty pattern matches any name.
type glob struct {
	pat  string
	wild bool
}

func newGlob(p string) (glob, error) {
	if p != "" && strings.TrimSpace(p) == "" {
		return glob{}, fmt.Errorf("pattern %q is blank", p)
	}
	if p == "*" {
		p = ""
	}
	return glob{pat: p, wild: strings.ContainsAny(p, "*?")}, nil
}

func (g glob) match(s string) bool {
	switch {
	case g.pat == "":
		return true
	case !g.wild:
		return g.pat == s
	}
	p := g.pat
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(p) && p[pi] == '?':
			_, n := utf8.DecodeRuneInString(s[si:])
			pi, si = pi+1, si+n
		case pi < len(p) && p[pi] == s[si]:
			pi, si = pi+1, si+1
		case star >= 0:
			_, n := utf8.DecodeRuneInString(s[mark:])
			mark += n
			pi, si = star+1, mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
