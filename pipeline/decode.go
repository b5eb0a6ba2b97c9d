package pipeline

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/mcplens/mcplens/pipeline/classify"
)

// DecodeOptions bounds and shapes decoding. The zero value, and a nil
// *DecodeOptions, select the defaults. docs/capture-format.md describes the
// limits.
type DecodeOptions struct {
	DefaultTenant   string           // "default" when empty
	MaxLineBytes    int              // 0 = 1 MiB
	MaxDepth        int              // JSON nesting limit over the whole line, 0 = 64
	MaxArgs         int              // top-level + flattened argument entries, 0 = 256
	MaxValueBytes   int              // cap for each exploded argument key and value, 0 = 256
	MaxMessageBytes int              // cap for Call.Message and Call.RPCMessage, 0 = 512
	Redactor        *Redactor        // nil = DefaultRedactor()
	Now             func() time.Time // for IngestedMs; nil = time.Now
	// Tenants, when set, are the only tenants a line may name: the ingest
	// token's. A line naming another tenant is rejected; a line naming
	// none gets DefaultTenant, which should be the first of Tenants.
	Tenants []string
}

// ErrSkip is returned for a valid line that is not a tools/call (counted and
// skipped). Blank lines are skipped the same way. DecodeCapture returns it
// unwrapped.
var ErrSkip = errors.New("not a tools/call")

// Defaults of DecodeOptions and the fixed limits of the decoder.
const (
	defaultTenant       = "default"
	defaultServer       = "unknown"
	defaultMaxLine      = 1 << 20
	defaultMaxDepth     = 64
	defaultMaxArgs      = 256
	defaultMaxValue     = 256
	defaultMaxMessage   = 512
	classifierTextBytes = 4 << 10 // text kept per call for the classifier (Input.Texts, Input.RPCMessage)
	sourceCapture       = "capture"
	resultComplete      = "complete"
	resultTask          = "task"
	protocolVersionKey  = "io.modelcontextprotocol/protocolVersion"
	clientInfoKey       = "io.modelcontextprotocol/clientInfo"
)

// decodeLimits are DecodeOptions with the defaults applied.
type decodeLimits struct {
	tenant     string
	maxLine    int
	maxDepth   int
	maxArgs    int
	maxValue   int
	maxMessage int
	red        *Redactor
	now        func() time.Time
}

func (o *DecodeOptions) limits() decodeLimits {
	l := decodeLimits{
		tenant: defaultTenant, maxLine: defaultMaxLine, maxDepth: defaultMaxDepth, maxArgs: defaultMaxArgs,
		maxValue: defaultMaxValue, maxMessage: defaultMaxMessage, now: time.Now,
	}
	if o != nil {
		if o.DefaultTenant != "" {
			l.tenant = o.DefaultTenant
		}
		if o.MaxLineBytes > 0 {
			l.maxLine = o.MaxLineBytes
		}
		if o.MaxDepth > 0 {
			l.maxDepth = o.MaxDepth
		}
		if o.MaxArgs > 0 {
			l.maxArgs = o.MaxArgs
		}
		if o.MaxValueBytes > 0 {
			l.maxValue = o.MaxValueBytes
		}
		if o.MaxMessageBytes > 0 {
			l.maxMessage = o.MaxMessageBytes
		}
		if o.Redactor != nil {
			l.red = o.Redactor
		}
		if o.Now != nil {
			l.now = o.Now
		}
	}
	if l.red == nil {
		l.red = DefaultRedactor()
	}
	return l
}

// DecodeCapture decodes one NDJSON capture line (docs/capture-format.md) into
// a Call, without the classification fields, and the classifier's Input. It
// returns ErrSkip for a blank line or a request whose method is not
// tools/call, and a short, human-facing error for anything it rejects. The
// results do not alias line, so the caller may reuse it; the Input's raw
// JSON slices (Arguments, Structured, ResultMeta, ErrorData) share memory
// with the Call's strings and must not be written to. DecodeCapture is
// safe for concurrent use.
func DecodeCapture(line []byte, opts *DecodeOptions) (Call, classify.Input, error) {
	lim := opts.limits()
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	if len(line) > lim.maxLine {
		return Call{}, classify.Input{}, fmt.Errorf("line exceeds %d bytes", lim.maxLine)
	}
	if len(line) >= 3 && line[0] == 0xEF && line[1] == 0xBB && line[2] == 0xBF {
		line = line[3:] // UTF-8 byte order mark
	}
	if isBlank(line) {
		return Call{}, classify.Input{}, ErrSkip
	}
	st := getState()
	defer putState(st)
	d := capDecoder{decodeState: st, lim: lim}
	d.s = jscan{buf: line, maxDepth: lim.maxDepth, kbuf: d.s.kbuf}
	if err := d.line(); err != nil {
		return Call{}, classify.Input{}, err
	}
	return d.finish(opts)
}

// finish applies the line-level rules to the decoded fields and builds the
// Call and the Input.
func (d *capDecoder) finish(opts *DecodeOptions) (Call, classify.Input, error) {
	if err := d.check(); err != nil {
		return Call{}, classify.Input{}, err
	}
	c, in, err := d.build()
	if err != nil {
		return Call{}, classify.Input{}, err
	}
	if err := checkIdentity(&c); err != nil {
		return Call{}, classify.Input{}, err
	}
	if opts != nil && len(opts.Tenants) > 0 && !slices.Contains(opts.Tenants, c.Tenant) {
		return Call{}, classify.Input{}, fmt.Errorf("tenant %s is not allowed for this token (allowed: %s)",
			quoteShort([]byte(c.Tenant)), strings.Join(opts.Tenants, ", "))
	}
	return c, in, nil
}

// Fixed limits on the names and ids of a call. Names become sort-key and
// low-cardinality columns and API filters (which take 256 bytes at most);
// ids are part of the call identity. Longer values are rejected rather
// than cut, because a cut value would change the call's identity.
const (
	maxNameBytes = 256
	maxIDBytes   = 512
)

// checkIdentity rejects a call whose names or ids exceed the fixed limits.
func checkIdentity(c *Call) error {
	for _, f := range [...]struct {
		name, v string
		max     int
	}{
		{"tenant", c.Tenant, maxNameBytes}, {"server", c.Server, maxNameBytes}, {"params.name (tool)", c.Tool, maxNameBytes},
		{"client", c.Client, maxNameBytes}, {"protocol_version", c.ProtocolVersion, maxNameBytes},
		{"session_id", c.SessionID, maxIDBytes}, {"request id", c.RequestID, maxIDBytes}, {"trace id", c.TraceID, maxIDBytes},
	} {
		if len(f.v) > f.max {
			return fmt.Errorf("%s: %d bytes, more than the limit of %d", f.name, len(f.v), f.max)
		}
	}
	return nil
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// span is a range of an arena; ok reports that the field was present.
type span struct {
	a, b int
	ok   bool
}

// decodeState holds the reusable buffers of one decode; it is pooled.
type decodeState struct {
	s       jscan
	canon   canonizer
	ex      exploder
	arena   []byte // Call strings, converted to one string at the end
	iarena  []byte // Input strings and raw JSON, copied to one buffer at the end
	scratch []byte
	texts   []span
	hashBuf []byte
}

var statePool = sync.Pool{New: func() any { return new(decodeState) }}

func getState() *decodeState { return statePool.Get().(*decodeState) }

// putState returns st to the pool, dropping buffers that one large line grew
// so that the pool does not pin them.
func putState(st *decodeState) {
	const keep = 64 << 10
	if cap(st.arena) > keep || cap(st.iarena) > keep ||
		cap(st.scratch) > keep || cap(st.canon.out) > keep || cap(st.canon.tmp) > keep ||
		cap(st.ex.red) > keep || cap(st.ex.vals) > keep {
		return
	}
	st.s.buf, st.ex.s.buf = nil, nil
	statePool.Put(st)
}

// capDecoder decodes one capture line.
type capDecoder struct {
	*decodeState
	lim      decodeLimits
	fieldErr error // the first field-level error; reported after the skip check

	hasTime  bool
	timeMs   int64
	duration int64
	tenant   span
	server   span
	session  span
	client   span
	protoVer span
	traceID  span
	localErr span // in iarena
	rawBytes int  // bytes of raw JSON in iarena; the rest are strings

	hasRequest bool
	req        reqFields
	hasResp    bool
	resp       respFields
}

type reqFields struct {
	hasMethod    bool
	toolsCall    bool
	id           span
	hasParams    bool
	name         span
	args         bool // canonical arguments are in canon.out
	metaProto    span
	metaClient   span
	metaTrace    span
	continuation bool
}

type respFields struct {
	hasResult     bool
	hasError      bool
	isError       int8
	resultType    span
	task          bool
	contentBlocks int32
	textBytes     int64
	textBudget    int
	firstText     int // index in texts of the first text block, -1 when none
	structured    span
	meta          span
	rpcCode       int64
	rpcMessage    span // in iarena, raw
	errData       span
}

func noResponse() respFields {
	return respFields{isError: -1, contentBlocks: -1, firstText: -1, textBudget: classifierTextBytes}
}

func (d *capDecoder) fail(format string, args ...any) {
	if d.fieldErr == nil {
		d.fieldErr = fmt.Errorf(format, args...)
	}
}

// line decodes the top-level object.
func (d *capDecoder) line() error {
	s := &d.s
	d.reset()
	s.ws()
	if c := s.peek(); c != '{' {
		if k := kindName(c); k != "" {
			if err := s.skip(); err != nil {
				return err
			}
			return fmt.Errorf("want one JSON object per line, got %s", k)
		}
		return s.unexpected("want '{'")
	}
	if err := s.enter(); err != nil {
		return err
	}
	for i := 0; ; i++ {
		key, ok, err := s.member(i)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "time":
			err = d.timeField()
		case "duration_ms":
			err = d.durationField()
		case "tenant":
			d.tenant, err = d.stringField(&d.arena, "tenant")
		case "server":
			d.server, err = d.stringField(&d.arena, "server")
		case "session_id":
			d.session, err = d.stringField(&d.arena, "session_id")
		case "client":
			d.client, err = d.stringField(&d.arena, "client")
		case "protocol_version":
			d.protoVer, err = d.stringField(&d.arena, "protocol_version")
		case "trace_id":
			d.traceID, err = d.stringField(&d.arena, "trace_id")
		case "error":
			d.localErr, err = d.stringField(&d.iarena, "error")
		case "request":
			err = d.request()
		case "response":
			err = d.response()
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
	s.ws()
	if s.pos < len(s.buf) {
		return s.unexpected("want end of line after the object")
	}
	return nil
}

// reset empties the arenas and sets every field to absent.
func (d *capDecoder) reset() {
	d.arena, d.iarena, d.texts, d.rawBytes = d.arena[:0], d.iarena[:0], d.texts[:0], 0
	d.duration = -1
	d.resp = noResponse()
}

// stringField reads a string (decoded into arena) or null (absent); other
// types are a field error.
func (d *capDecoder) stringField(arena *[]byte, name string) (span, error) {
	s := &d.s
	s.ws()
	switch c := s.peek(); c {
	case '"':
		a := len(*arena)
		var err error
		*arena, err = s.appendString(*arena)
		return span{a, len(*arena), true}, err
	case 'n':
		return span{}, s.literal("null")
	default:
		if err := s.skip(); err != nil {
			return span{}, err
		}
		d.fail("%s: want string, got %s", name, kindName(c))
		return span{}, nil
	}
}

// optString reads a string into arena when the value is one and skips any
// other value; for fields where a wrong type is tolerated.
func (d *capDecoder) optString(arena *[]byte) (span, error) {
	s := &d.s
	s.ws()
	if s.peek() != '"' {
		return span{}, s.skip()
	}
	a := len(*arena)
	var err error
	*arena, err = s.appendString(*arena)
	return span{a, len(*arena), true}, err
}

// scratchString decodes a string into d.scratch (or returns an alias of the
// line); ok is false, with the value skipped, for any other type.
func (d *capDecoder) scratchString() (v []byte, ok bool, err error) {
	s := &d.s
	s.ws()
	if s.peek() != '"' {
		return nil, false, s.skip()
	}
	v, err = s.str(&d.scratch)
	return v, err == nil, err
}

func (d *capDecoder) timeField() error {
	s := &d.s
	s.ws()
	c := s.peek()
	if c != '"' {
		if err := s.skip(); err != nil {
			return err
		}
		if c != 'n' {
			d.fail("time: want RFC 3339 string, got %s", kindName(c))
		}
		d.hasTime = false
		return nil
	}
	v, err := s.str(&d.scratch)
	if err != nil {
		return err
	}
	d.setTime(v)
	return nil
}

// setTime sets the call's time from its RFC 3339 text, or records the
// line's error.
func (d *capDecoder) setTime(v []byte) {
	ms, ok := parseRFC3339Millis(v)
	switch {
	case !ok:
		d.fail("time: want RFC 3339, got %s", quoteShort(v))
	case ms < 0 || ms >= maxTimeMs:
		d.fail("time: %s is out of range (1970 to 2105)", quoteShort(v))
	default:
		d.hasTime, d.timeMs = true, ms
	}
}

// maxTimeMs is 2106-01-01T00:00:00Z: the calls table stores DateTime, which
// ends in February 2106.
const maxTimeMs = 4291747200000

func (d *capDecoder) durationField() error {
	s := &d.s
	s.ws()
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		if err := s.skip(); err != nil {
			return err
		}
		if c != 'n' {
			d.fail("duration_ms: want number, got %s", kindName(c))
		}
		d.duration = -1
		return nil
	}
	n, err := s.number()
	if err != nil {
		return err
	}
	lit := s.buf[n.start:n.end]
	if n.neg {
		d.fail("duration_ms: want a non-negative number, got %s", lit)
		return nil
	}
	if v, ok := n.int64(s.buf); ok {
		d.duration = v
		return nil
	}
	f, perr := strconv.ParseFloat(string(lit), 64)
	if perr != nil || f >= math.MaxInt64 {
		d.fail("duration_ms: %s is out of range", lit)
		return nil
	}
	d.duration = int64(math.Round(f))
	return nil
}

func (d *capDecoder) request() error {
	s := &d.s
	d.req = reqFields{}
	d.hasRequest = false
	if ok, err := d.openObject("request"); !ok || err != nil {
		return err
	}
	d.hasRequest = true
	for i := 0; ; i++ {
		key, ok, err := s.member(i)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		switch string(key) {
		case "id":
			err = d.requestID()
		case "method":
			err = d.method()
		case "params":
			err = d.params()
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

func (d *capDecoder) method() error {
	s := &d.s
	s.ws()
	c := s.peek()
	if c != '"' {
		d.req.hasMethod = false
		if err := s.skip(); err != nil {
			return err
		}
		if c != 'n' {
			d.fail("request.method: want string, got %s", kindName(c))
		}
		return nil
	}
	v, err := s.str(&d.scratch)
	if err != nil {
		return err
	}
	d.req.hasMethod = true
	d.req.toolsCall = string(v) == "tools/call"
	return nil
}

// requestID keeps a string id as sent and a numeric id as its literal text.
func (d *capDecoder) requestID() error {
	s := &d.s
	s.ws()
	d.req.id = span{}
	switch c := s.peek(); {
	case c == '"':
		a := len(d.arena)
		var err error
		d.arena, err = s.appendString(d.arena)
		d.req.id = span{a, len(d.arena), true}
		return err
	case c == '-' || c >= '0' && c <= '9':
		n, err := s.number()
		if err != nil {
			return err
		}
		a := len(d.arena)
		d.arena = append(d.arena, s.buf[n.start:n.end]...)
		d.req.id = span{a, len(d.arena), true}
		return nil
	default:
		if err := s.skip(); err != nil {
			return err
		}
		d.fail("request.id: want string or number, got %s", kindName(c))
		return nil
	}
}

func (d *capDecoder) params() error {
	s := &d.s
	d.req.hasParams, d.req.name, d.req.args, d.req.continuation = false, span{}, false, false
	d.req.metaProto, d.req.metaClient, d.req.metaTrace = span{}, span{}, span{}
	if ok, err := d.openObject("request.params"); !ok || err != nil {
		return err
	}
	d.req.hasParams = true
	for i := 0; ; i++ {
		key, ok, err := s.member(i)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		switch string(key) {
		case "name":
			d.req.name, err = d.stringField(&d.arena, "request.params.name")
		case "arguments":
			d.canon.reset()
			err = d.canon.value(s)
			d.req.args = true
		case "_meta":
			err = d.requestMeta()
		case "inputResponses", "requestState":
			s.ws()
			if s.peek() != 'n' {
				d.req.continuation = true
			}
			err = s.skip()
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

// requestMeta reads the 2026-07-28 reserved keys of params._meta and the W3C
// traceparent. Values of unexpected types are ignored.
func (d *capDecoder) requestMeta() error {
	s := &d.s
	if ok, err := d.enterIfObject(); !ok || err != nil {
		return err
	}
	for i := 0; ; i++ {
		key, ok, err := s.member(i)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		switch string(key) {
		case protocolVersionKey:
			d.req.metaProto, err = d.optString(&d.arena)
		case clientInfoKey:
			err = d.clientInfo()
		case "traceparent":
			var v []byte
			if v, ok, err = d.scratchString(); ok {
				if id := traceIDFromTraceparent(v); id != nil {
					a := len(d.arena)
					d.arena = append(d.arena, id...)
					d.req.metaTrace = span{a, len(d.arena), true}
				}
			}
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

func (d *capDecoder) clientInfo() error {
	s := &d.s
	if ok, err := d.enterIfObject(); !ok || err != nil {
		return err
	}
	for i := 0; ; i++ {
		key, ok, err := s.member(i)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if string(key) == "name" {
			d.req.metaClient, err = d.optString(&d.arena)
		} else {
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

// traceIDFromTraceparent returns the trace id of a W3C traceparent
// ("00-<32 hex>-<16 hex>-<2 hex>"), or nil when v is not one or the id is
// all zeros.
func traceIDFromTraceparent(v []byte) []byte {
	if len(v) < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return nil
	}
	id := v[3:35]
	zero := true
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return nil
		}
		if c != '0' {
			zero = false
		}
	}
	if zero {
		return nil
	}
	return id
}

func (d *capDecoder) response() error {
	s := &d.s
	d.hasResp = false
	d.resp = noResponse()
	d.texts = d.texts[:0]
	if ok, err := d.openObject("response"); !ok || err != nil {
		return err
	}
	d.hasResp = true
	for i := 0; ; i++ {
		key, ok, err := s.member(i)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "result":
			err = d.result()
		case "error":
			err = d.rpcError()
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
	switch {
	case d.resp.hasResult && d.resp.hasError:
		d.fail(`response: has both "result" and "error"`)
	case !d.resp.hasResult && !d.resp.hasError:
		d.fail(`response: want "result" or "error"`)
	}
	return nil
}

func (d *capDecoder) result() error {
	s := &d.s
	r := &d.resp
	r.hasResult = false
	r.isError, r.resultType, r.task, r.contentBlocks = -1, span{}, false, -1
	r.textBytes, r.textBudget, r.firstText, r.structured, r.meta = 0, classifierTextBytes, -1, span{}, span{}
	d.texts = d.texts[:0]
	if ok, err := d.openObject("response.result"); !ok || err != nil {
		return err
	}
	r.hasResult = true
	for i := 0; ; i++ {
		key, ok, err := s.member(i)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		switch string(key) {
		case "content":
			err = d.content()
		case "isError":
			err = d.isError()
		case "resultType":
			r.resultType, err = d.optString(&d.arena)
		case "structuredContent":
			r.structured, err = d.rawValue()
		case "_meta":
			r.meta, err = d.rawValue()
		case "task":
			s.ws()
			r.task = s.peek() == '{'
			err = s.skip()
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

// isError accepts true, false and their string forms; anything else reads
// as absent.
func (d *capDecoder) isError() error {
	s := &d.s
	s.ws()
	d.resp.isError = -1
	switch s.peek() {
	case 't':
		d.resp.isError = 1
		return s.literal("true")
	case 'f':
		d.resp.isError = 0
		return s.literal("false")
	case '"':
		v, err := s.str(&d.scratch)
		switch string(v) {
		case "true":
			d.resp.isError = 1
		case "false":
			d.resp.isError = 0
		}
		return err
	}
	return s.skip()
}

// rawValue validates the value at the cursor and copies its JSON text, as
// written, to d.iarena.
func (d *capDecoder) rawValue() (span, error) {
	s := &d.s
	s.ws()
	start := s.pos
	if err := s.skip(); err != nil {
		return span{}, err
	}
	a := len(d.iarena)
	d.iarena = append(d.iarena, s.buf[start:s.pos]...)
	d.rawBytes += s.pos - start
	return span{a, len(d.iarena), true}, nil
}

// content counts the content blocks and keeps the text blocks.
func (d *capDecoder) content() error {
	s := &d.s
	r := &d.resp
	r.contentBlocks, r.textBytes, r.textBudget, r.firstText = -1, 0, classifierTextBytes, -1
	d.texts = d.texts[:0]
	s.ws()
	if s.peek() != '[' {
		return s.skip()
	}
	if err := s.enter(); err != nil {
		return err
	}
	var n int32
	for i := 0; ; i++ {
		ok, err := s.element(i)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if n < math.MaxInt32 {
			n++
		}
		if s.peek() == '{' {
			err = d.contentBlock()
		} else {
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
	r.contentBlocks = n
	return nil
}

func (d *capDecoder) contentBlock() error {
	s := &d.s
	if err := s.enter(); err != nil {
		return err
	}
	// The text is decoded straight into iarena, cut to the budget left;
	// it is dropped again unless the block turns out to be a text block.
	r := &d.resp
	a := len(d.iarena)
	var textLen int
	isText, hasText := false, false
	for i := 0; ; i++ {
		key, ok, err := s.member(i)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "type":
			var v []byte
			v, ok, err = d.scratchString()
			isText = ok && string(v) == "text"
		case "text":
			s.ws()
			d.iarena = d.iarena[:a]
			if s.peek() == '"' {
				d.iarena, textLen, err = s.appendStringCut(d.iarena, r.textBudget)
				hasText = err == nil
			} else {
				hasText = false
				err = s.skip()
			}
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
	if !isText || !hasText {
		d.iarena = d.iarena[:a]
		return nil
	}
	r.textBytes += int64(textLen)
	if r.textBudget > 0 {
		r.textBudget -= len(d.iarena) - a
		if r.firstText < 0 {
			r.firstText = len(d.texts)
		}
		d.texts = append(d.texts, span{a, len(d.iarena), true})
	}
	return nil
}

// enterIfObject enters the value if it is an object and reports true; any
// other value is skipped without complaint (fields whose odd types are
// ignored).
func (d *capDecoder) enterIfObject() (bool, error) {
	s := &d.s
	s.ws()
	if s.peek() != '{' {
		return false, s.skip()
	}
	return true, s.enter()
}

// openObject reads a field's value that must be an object or null. It
// enters an object and reports true; null is accepted and skipped; any other
// value is skipped and recorded as the line's error ("field: want object").
func (d *capDecoder) openObject(field string) (bool, error) {
	s := &d.s
	s.ws()
	switch c := s.peek(); c {
	case '{':
	case 'n':
		return false, s.literal("null")
	default:
		if err := s.skip(); err != nil {
			return false, err
		}
		d.fail("%s: want object, got %s", field, kindName(c))
		return false, nil
	}
	return true, s.enter()
}

func (d *capDecoder) rpcError() error {
	s := &d.s
	r := &d.resp
	r.hasError, r.rpcCode, r.rpcMessage, r.errData = false, 0, span{}, span{}
	if ok, err := d.openObject("response.error"); !ok || err != nil {
		return err
	}
	r.hasError = true
	for i := 0; ; i++ {
		key, ok, err := s.member(i)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		switch string(key) {
		case "code":
			err = d.rpcCode()
		case "message":
			s.ws()
			if s.peek() == '"' {
				a := len(d.iarena)
				if d.iarena, _, err = s.appendStringCut(d.iarena, classifierTextBytes); err == nil {
					r.rpcMessage = span{a, len(d.iarena), true}
				}
			} else {
				r.rpcMessage = span{}
				err = s.skip()
			}
		case "data":
			r.errData, err = d.rawValue()
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
	}
}

// rpcCode reads error.code: an integer, an integral float or a numeric
// string; anything else reads as 0.
func (d *capDecoder) rpcCode() error {
	s := &d.s
	d.resp.rpcCode = 0
	s.ws()
	switch c := s.peek(); {
	case c == '-' || c >= '0' && c <= '9':
		n, err := s.number()
		if err != nil {
			return err
		}
		if v, ok := n.int64(s.buf); ok {
			d.resp.rpcCode = v
		} else if f, err := strconv.ParseFloat(string(s.buf[n.start:n.end]), 64); err == nil &&
			f == math.Trunc(f) && math.Abs(f) < 1<<62 {
			d.resp.rpcCode = int64(f)
		}
		return nil
	case c == '"':
		v, err := s.str(&d.scratch)
		if err != nil {
			return err
		}
		if x, perr := strconv.ParseInt(string(v), 10, 64); perr == nil {
			d.resp.rpcCode = x
		}
		return nil
	}
	return s.skip()
}

// check applies the line-level rules in order: a non-tools/call request is
// skipped before any field error is reported, and field errors come before
// missing required fields.
func (d *capDecoder) check() error {
	if !d.hasRequest {
		if d.fieldErr != nil {
			return d.fieldErr
		}
		return errors.New(`missing "request"`)
	}
	if !d.req.hasMethod {
		if d.fieldErr != nil {
			return d.fieldErr
		}
		return errors.New("request.method: missing")
	}
	if !d.req.toolsCall {
		return ErrSkip
	}
	switch {
	case d.fieldErr != nil:
		return d.fieldErr
	case !d.hasTime:
		return errors.New(`missing "time"`)
	case !d.req.id.ok:
		return errors.New("request.id: missing")
	case !d.req.hasParams:
		return errors.New("request.params: missing")
	case !d.req.name.ok:
		return errors.New("request.params.name: missing")
	case d.req.name.a == d.req.name.b:
		return errors.New("request.params.name: empty")
	}
	return nil
}

// build assembles the Call and the Input. All Call strings share one
// allocation, and all Input strings another.
func (d *capDecoder) build() (Call, classify.Input, error) {
	lim := &d.lim
	r := &d.resp

	server := d.server
	if !server.ok || server.a == server.b {
		server = d.constSpan(defaultServer)
	}
	tenant := d.tenant
	if !tenant.ok || tenant.a == tenant.b {
		tenant = d.constSpan(lim.tenant)
	}
	proto := d.protoVer
	if !proto.ok || proto.a == proto.b {
		proto = d.req.metaProto
	}
	client := d.client
	if !client.ok || client.a == client.b {
		client = d.req.metaClient
	}
	trace := d.traceID
	if !trace.ok || trace.a == trace.b {
		trace = d.req.metaTrace
	}

	// Arguments: canonical text, its hash, then redaction and the exploded
	// entries, all appended to the arena.
	canon := d.canon.out
	if !d.req.args || string(canon) == "null" {
		canon = append(d.canon.out[:0], "{}"...)
	}
	argsHash := xxhash.Sum64(canon)
	argsRaw := span{len(d.iarena), len(d.iarena) + len(canon), true} // unredacted, for Input.Arguments
	d.iarena = append(d.iarena, canon...)
	d.rawBytes += len(canon)
	hashOnly := lim.red.hashOnlyBytes(d.arena[server.a:server.b])
	if err := d.ex.run(canon, lim.red, hashOnly, lim.maxValue); err != nil {
		return Call{}, classify.Input{}, err
	}
	argsJSON := span{len(d.arena), 0, true}
	d.arena = append(d.arena, d.ex.red...)
	argsJSON.b = len(d.arena)
	entBase := len(d.arena)
	d.arena = append(d.arena, d.ex.vals...)

	callID := d.callID(tenant, server)
	sessionKey := d.session
	if !sessionKey.ok || sessionKey.a == sessionKey.b {
		sessionKey = trace
	}
	if !sessionKey.ok || sessionKey.a == sessionKey.b {
		a := len(d.arena)
		d.arena = appendHex64(append(d.arena, "call:"...), callID)
		sessionKey = span{a, len(d.arena), true}
	}

	// Message: the JSON-RPC error message, else the local error, else the
	// first text block; scrubbed, then truncated.
	var msgSrc []byte
	switch {
	case r.rpcMessage.ok:
		msgSrc = d.iarena[r.rpcMessage.a:r.rpcMessage.b]
	case d.localErr.ok:
		msgSrc = d.iarena[d.localErr.a:d.localErr.b]
	case r.firstText >= 0:
		t := d.texts[r.firstText]
		msgSrc = d.iarena[t.a:t.b]
	}
	message := d.appendMessage(msgSrc)
	var rpcMessage span
	if r.rpcMessage.ok {
		rpcMessage = d.appendMessage(d.iarena[r.rpcMessage.a:r.rpcMessage.b])
	}

	resultType := span{}
	resultTypeLit := ""
	if r.hasResult {
		switch {
		case r.resultType.ok && r.resultType.a < r.resultType.b:
			resultType = r.resultType
		case r.task:
			resultTypeLit = resultTask
		default:
			resultTypeLit = resultComplete
		}
	}

	// One allocation holds the Call's strings (arena) and, after them, the
	// Input's strings and raw JSON (iarena). The Call's strings view bytes
	// that none of the raw slices (each capped to its span, and all after
	// the arena's copy) covers, so they never change.
	var sb strings.Builder // its buffer is not zeroed first
	sb.Grow(len(d.arena) + len(d.iarena))
	sb.Write(d.arena)
	sb.Write(d.iarena)
	all := sb.String()
	str := all[:len(d.arena)]
	at := func(sp span) string {
		if !sp.ok {
			return ""
		}
		return str[sp.a:sp.b]
	}
	c := Call{
		Time:            time.UnixMilli(d.timeMs).UTC(),
		TimeMs:          d.timeMs,
		DurationMs:      d.duration,
		Tenant:          at(tenant),
		Server:          at(server),
		Tool:            at(d.req.name),
		SessionID:       at(d.session),
		SessionKey:      at(sessionKey),
		TraceID:         at(trace),
		RequestID:       at(d.req.id),
		CallID:          callID,
		Client:          at(client),
		ProtocolVersion: at(proto),
		Source:          sourceCapture,
		ArgsJSON:        at(argsJSON),
		ArgsHash:        argsHash,
		IsError:         -1,
		ContentBlocks:   -1,
		Message:         at(message),
		IngestedMs:      lim.now().UnixMilli(),
	}
	n := min(len(d.ex.ents), lim.maxArgs)
	kv := make([]string, 2*n) // one allocation for both lists
	c.ArgKeys, c.ArgValues = kv[:n:n], kv[n:]
	if n > 0 {
		for i, e := range d.ex.ents[:n] {
			c.ArgKeys[i] = str[entBase+e.k0 : entBase+e.k1]
			c.ArgValues[i] = str[entBase+e.v0 : entBase+e.v1]
		}
	}
	if d.req.continuation {
		c.Continuation = 1
	}
	if d.hasResp {
		c.HasResponse = 1
		c.IsError = r.isError
		if r.hasError {
			c.RPCError = 1
			c.RPCCode = r.rpcCode
			c.RPCMessage = at(rpcMessage)
		}
		if r.hasResult {
			c.ResultType = resultTypeLit
			if resultType.ok {
				c.ResultType = at(resultType)
			}
			c.ContentBlocks = r.contentBlocks
			c.TextBytes = r.textBytes
			if r.structured.ok {
				c.HasStructured = 1
			}
		}
	}

	in := classify.Input{
		Server:          c.Server,
		Tool:            c.Tool,
		ProtocolVersion: c.ProtocolVersion,
		HasResponse:     c.HasResponse == 1,
		IsError:         c.IsError,
		RPCError:        c.RPCError == 1,
		RPCCode:         c.RPCCode,
		ResultType:      c.ResultType,
		ContentBlocks:   int(c.ContentBlocks),
	}
	// The Input's strings and raw slices view the copy of iarena; nothing
	// writes through the raw slices (the classifier and the schema check
	// only read them), and each is capped to its span.
	istr := all[len(d.arena):]
	ibuf := unsafe.Slice(unsafe.StringData(istr), len(istr))
	if len(d.iarena) > d.rawBytes { // the strings are not all empty
		if r.rpcMessage.ok {
			in.RPCMessage = istr[r.rpcMessage.a:r.rpcMessage.b]
		}
		if d.localErr.ok {
			in.LocalError = istr[d.localErr.a:d.localErr.b]
		}
		if len(d.texts) > 0 {
			in.Texts = make([]string, len(d.texts))
			for i, t := range d.texts {
				in.Texts[i] = istr[t.a:t.b]
			}
		}
	}
	rawAt := func(sp span) []byte {
		if !sp.ok {
			return nil
		}
		return ibuf[sp.a:sp.b:sp.b]
	}
	in.ErrorData = rawAt(r.errData)
	in.Structured = rawAt(r.structured)
	in.ResultMeta = rawAt(r.meta)
	in.Arguments = rawAt(argsRaw)
	if !r.hasResult {
		in.Texts, in.Structured, in.ResultMeta = nil, nil, nil
	}
	if !r.hasError {
		in.RPCMessage, in.ErrorData = "", nil
	}
	return c, in, nil
}

// constSpan appends a constant to the arena.
func (d *capDecoder) constSpan(v string) span {
	a := len(d.arena)
	d.arena = append(d.arena, v...)
	return span{a, len(d.arena), true}
}

// appendMessage appends src, scrubbed by the Redactor and cut to
// MaxMessageBytes (ending in "…" when cut), to the arena.
func (d *capDecoder) appendMessage(src []byte) span {
	if len(src) == 0 {
		return span{}
	}
	limit := d.lim.maxMessage
	// Scrub a little more than is kept, so that a secret cut by the limit is
	// still recognised.
	cut := len(src) > limit+256
	if cut {
		src = src[:utf8Cut(src, limit+256)]
	}
	a := len(d.arena)
	var changed bool
	d.arena, changed = scrubAppend(d.lim.red, d.arena, src)
	if !changed {
		d.arena = append(d.arena, src...)
	}
	if msg := d.arena[a:]; cut || len(msg) > limit {
		const ellipsis = "…"
		keep := utf8Cut(msg, max(limit-len(ellipsis), 0))
		d.arena = append(d.arena[:a+keep], ellipsis...)
	}
	return span{a, len(d.arena), true}
}

// callID hashes tenant, server, session id, request id and the request time
// in milliseconds, each string prefixed with its length, with xxHash64.
func (d *capDecoder) callID(tenant, server span) uint64 {
	b := d.hashBuf[:0]
	for _, sp := range [...]span{tenant, server, d.session, d.req.id} {
		var v []byte
		if sp.ok {
			v = d.arena[sp.a:sp.b]
		}
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(d.timeMs))
	d.hashBuf = b
	return xxhash.Sum64(b)
}

// parseRFC3339Millis parses an RFC 3339 date-time ("2026-11-29T10:00:00.123Z",
// "…+08:00"; "t", "z" and a space separator are accepted) and returns unix
// milliseconds, truncating finer fractions.
func parseRFC3339Millis(v []byte) (int64, bool) {
	num := func(b []byte) (int, bool) {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	if len(v) < 20 || v[4] != '-' || v[7] != '-' || v[13] != ':' || v[16] != ':' {
		return 0, false
	}
	if c := v[10]; c != 'T' && c != 't' && c != ' ' {
		return 0, false
	}
	year, ok1 := num(v[0:4])
	month, ok2 := num(v[5:7])
	day, ok3 := num(v[8:10])
	hour, ok4 := num(v[11:13])
	minute, ok5 := num(v[14:16])
	sec, ok6 := num(v[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 ||
		day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 60 {
		return 0, false
	}
	rest := v[19:]
	ms := 0
	if rest[0] == '.' {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			if i <= 3 {
				ms = ms*10 + int(rest[i]-'0')
			}
			i++
		}
		if i == 1 {
			return 0, false
		}
		for k := i; k <= 3; k++ {
			ms *= 10
		}
		rest = rest[i:]
	}
	offset := 0
	switch {
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := num(rest[1:3])
		om, ok2 := num(rest[4:6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return 0, false
		}
		offset = (oh*60 + om) * 60
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return 0, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC)
	return (t.Unix()-int64(offset))*1000 + int64(ms), true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// quoteShort quotes v for an error message, cut to 64 bytes.
func quoteShort(v []byte) string {
	if len(v) > 64 {
		return strconv.Quote(string(v[:utf8Cut(v, 64)])) + "…"
	}
	return strconv.Quote(string(v))
}

// utf8Cut returns the largest n <= limit such that b[:n] does not end inside
// a UTF-8 sequence.
func utf8Cut(b []byte, limit int) int {
	if len(b) <= limit {
		return len(b)
	}
	n := limit
	for n > 0 && n > limit-utf8.UTFMax && !utf8.RuneStart(b[n]) {
		n--
	}
	return n
}

// appendHex64 appends v as 16 lowercase hex digits.
func appendHex64(dst []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		dst = append(dst, digits[v>>uint(shift)&0xf])
	}
	return dst
}

// kindName names the JSON type that starts with c, or "" when c starts none.
func kindName(c byte) string {
	switch {
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	case c == '-' || c >= '0' && c <= '9':
		return "number"
	}
	return ""
}

// jscan is a validating JSON reader over one buffer. It never builds a tree:
// callers walk objects with member and arrays with element, and read or skip
// each value. Offsets in its errors count bytes from 1.
type jscan struct {
	buf      []byte
	pos      int
	depth    int
	maxDepth int
	kbuf     []byte // keys that needed unescaping
	keyAt    int    // where the last key read starts (its opening quote)
	keyPlain bool   // the last key needed no decoding: its JSON text is canonical
}

func (s *jscan) errAt(pos int, msg string) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", pos+1, msg)
}

// unexpected reports the byte at the cursor, or the end of input.
func (s *jscan) unexpected(want string) error {
	if s.pos >= len(s.buf) {
		return s.errAt(s.pos, "unexpected end of input, "+want)
	}
	c := s.buf[s.pos]
	var what string
	if c >= 0x20 && c < 0x7f {
		what = "'" + string(rune(c)) + "'"
	} else {
		what = fmt.Sprintf("byte 0x%02x", c)
	}
	return s.errAt(s.pos, "unexpected "+what+", "+want)
}

func (s *jscan) ws() {
	if s.pos < len(s.buf) && s.buf[s.pos] > ' ' {
		return
	}
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the byte at the cursor, or 0 at the end.
func (s *jscan) peek() byte {
	if s.pos < len(s.buf) {
		return s.buf[s.pos]
	}
	return 0
}

// enter consumes the '{' or '[' at the cursor and counts one nesting level.
func (s *jscan) enter() error {
	s.depth++
	if s.depth > s.maxDepth {
		return fmt.Errorf("JSON nesting deeper than %d", s.maxDepth)
	}
	s.pos++
	return nil
}

// member moves to the next member of the object being read; i counts the
// members read so far. It returns the decoded key, valid until the next key
// is read, with the cursor at the value (whitespace skipped), or ok=false
// after the closing '}'.
func (s *jscan) member(i int) (key []byte, ok bool, err error) {
	s.ws()
	if s.pos < len(s.buf) && s.buf[s.pos] == '}' {
		s.pos++
		s.depth--
		return nil, false, nil
	}
	if i > 0 {
		if s.pos >= len(s.buf) || s.buf[s.pos] != ',' {
			return nil, false, s.unexpected("want ',' or '}'")
		}
		s.pos++
		s.ws()
	}
	if s.pos >= len(s.buf) || s.buf[s.pos] != '"' {
		if i == 0 {
			return nil, false, s.unexpected("want a string key or '}'")
		}
		return nil, false, s.unexpected("want a string key")
	}
	s.keyAt = s.pos
	if key, s.keyPlain, err = s.strPlain(&s.kbuf); err != nil {
		return nil, false, err
	}
	s.ws()
	if s.pos >= len(s.buf) || s.buf[s.pos] != ':' {
		return nil, false, s.unexpected("want ':' after the key")
	}
	s.pos++
	s.ws()
	return key, true, nil
}

// element moves to the next element of the array being read, like member.
func (s *jscan) element(i int) (ok bool, err error) {
	s.ws()
	if s.pos < len(s.buf) && s.buf[s.pos] == ']' {
		s.pos++
		s.depth--
		return false, nil
	}
	if i > 0 {
		if s.pos >= len(s.buf) || s.buf[s.pos] != ',' {
			return false, s.unexpected("want ',' or ']'")
		}
		s.pos++
		s.ws()
	}
	return true, nil
}

// skip validates and skips the value at the cursor.
func (s *jscan) skip() error {
	s.ws()
	switch c := s.peek(); {
	case c == '{':
		if err := s.enter(); err != nil {
			return err
		}
		for i := 0; ; i++ {
			_, ok, err := s.member(i)
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
			if err := s.skip(); err != nil {
				return err
			}
		}
	case c == '[':
		if err := s.enter(); err != nil {
			return err
		}
		for i := 0; ; i++ {
			ok, err := s.element(i)
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
			if err := s.skip(); err != nil {
				return err
			}
		}
	case c == '"':
		_, _, _, err := s.scanString()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		_, err := s.number()
		return err
	}
	return s.unexpected("want a value")
}

func (s *jscan) literal(word string) error {
	if len(s.buf)-s.pos >= len(word) && string(s.buf[s.pos:s.pos+len(word)]) == word {
		s.pos += len(word)
		return nil
	}
	for i := 0; i < len(word); i++ {
		if s.pos+i >= len(s.buf) || s.buf[s.pos+i] != word[i] {
			s.pos += i
			return s.unexpected("want " + word)
		}
	}
	return nil
}

// scanString validates the string at the cursor and moves past it. It
// reports whether the string has escapes and whether it has non-ASCII bytes.
func (s *jscan) scanString() (start int, escaped, nonASCII bool, err error) {
	b := s.buf
	start = s.pos
	i := s.pos + 1
	var acc uint64 // OR of the plain bytes: bit 7 of any byte marks non-ASCII
	for {
		// Eight bytes at a time up to the first '"', '\\' or control
		// character; the bytes near the end of the line one at a time.
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			m := specialBytes(w)
			if m == 0 {
				acc |= w
				i += 8
				continue
			}
			n := bits.TrailingZeros64(m) >> 3 // the first special byte
			acc |= w & (1<<(8*n) - 1)
			i += n
			goto special
		}
		for i < len(b) {
			c := b[i]
			if !plainStringByte[c] {
				break
			}
			acc |= uint64(c)
			i++
		}
	special:
		if i >= len(b) {
			s.pos = i
			return start, false, false, s.errAt(start, "unterminated string")
		}
		c := b[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return start, escaped, acc&hiBits != 0, nil
		case c == '\\':
			if i+1 >= len(b) {
				s.pos = i + 1
				return start, false, false, s.errAt(start, "unterminated string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
					s.pos = i
					return start, false, false, s.errAt(i, "invalid \\u escape")
				}
				i += 6
			default:
				s.pos = i
				return start, false, false, s.errAt(i, fmt.Sprintf("invalid escape %q", b[i:i+2]))
			}
			escaped = true
		default: // c < 0x20
			s.pos = i
			return start, false, false, s.errAt(i, "control character in string")
		}
	}
}

// Masks for the word-at-a-time string scan.
const (
	loBits = 0x0101010101010101
	hiBits = 0x8080808080808080
)

// specialBytes marks with bit 7 the bytes of w (little endian) that are
// '"', '\\' or a control character (below 0x20). A byte above the first
// marked one may be marked wrongly (a borrow runs up from a marked byte),
// so the result is exact as to whether there is one and where the first
// one is: bits.TrailingZeros64(m)/8.
func specialBytes(w uint64) uint64 {
	q := w ^ (loBits * '"')
	bs := w ^ (loBits * '\\')
	return ((q-loBits)&^q | (bs-loBits)&^bs | (w-loBits*0x20)&^w) & hiBits
}

// escapeOrHighBytes marks, like specialBytes, the bytes of w that are
// '\\' or not ASCII.
func escapeOrHighBytes(w uint64) uint64 {
	bs := w ^ (loBits * '\\')
	return (w | (bs-loBits)&^bs) & hiBits
}

// plainStringByte marks the bytes that scanString passes over without a
// second look: everything but '"', '\\' and control characters.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < 0x100; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// str reads the string at the cursor. The result aliases the buffer when the
// string needs no decoding; otherwise it is decoded into *scratch.
func (s *jscan) str(scratch *[]byte) ([]byte, error) {
	v, _, err := s.strPlain(scratch)
	return v, err
}

// strPlain is str that also reports whether the string was plain: no escapes
// and valid UTF-8, so that its JSON text is already canonical.
func (s *jscan) strPlain(scratch *[]byte) (v []byte, plain bool, err error) {
	start, esc, high, err := s.scanString()
	if err != nil {
		return nil, false, err
	}
	inner := s.buf[start+1 : s.pos-1]
	if !esc && (!high || utf8.Valid(inner)) {
		return inner, true, nil
	}
	*scratch = appendUnescaped((*scratch)[:0], inner)
	return *scratch, false, nil
}

// appendString reads the string at the cursor and appends it, decoded, to dst.
func (s *jscan) appendString(dst []byte) ([]byte, error) {
	start, esc, high, err := s.scanString()
	if err != nil {
		return dst, err
	}
	inner := s.buf[start+1 : s.pos-1]
	if !esc && (!high || utf8.Valid(inner)) {
		return append(dst, inner...), nil
	}
	return appendUnescaped(dst, inner), nil
}

// appendStringCut reads the string at the cursor and appends it, decoded
// and cut to at most limit bytes at a UTF-8 boundary, to dst; n is the
// length of the whole decoded string.
func (s *jscan) appendStringCut(dst []byte, limit int) (out []byte, n int, err error) {
	start, esc, high, err := s.scanString()
	if err != nil {
		return dst, 0, err
	}
	inner := s.buf[start+1 : s.pos-1]
	if !esc && (!high || utf8.Valid(inner)) {
		return append(dst, inner[:utf8Cut(inner, max(limit, 0))]...), len(inner), nil
	}
	a := len(dst)
	dst = appendUnescaped(dst, inner)
	n = len(dst) - a
	return dst[:a+utf8Cut(dst[a:], max(limit, 0))], n, nil
}

// appendUnescaped decodes the inside of a validated JSON string. Invalid
// UTF-8 bytes and unpaired surrogate escapes become U+FFFD, as in
// encoding/json.
func appendUnescaped(dst, in []byte) []byte {
	start := 0 // in[start:i] is still to be copied as it is
	for i := 0; i < len(in); {
		// Runs of ASCII without escapes are copied in one piece.
		for i+8 <= len(in) {
			m := escapeOrHighBytes(binary.LittleEndian.Uint64(in[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
			break
		}
		if i >= len(in) {
			break
		}
		c := in[i]
		switch {
		case c == '\\':
			dst = append(dst, in[start:i]...)
			switch in[i+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := rune(hex4(in[i+2:]))
				i += 6
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+6 <= len(in) && in[i] == '\\' && in[i+1] == 'u' {
						r2 = rune(hex4(in[i+2:]))
					}
					if p := utf16.DecodeRune(r, r2); p != utf8.RuneError {
						r = p
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
				start = i
				continue
			default: // '"', '\\', '/'
				dst = append(dst, in[i+1])
			}
			i += 2
			start = i
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, in[start:i]...)
				dst = append(dst, "\uFFFD"...)
				start = i + 1
			}
			i += size
		}
	}
	return append(dst, in[start:]...)
}

func hex4(b []byte) uint16 {
	var v uint16
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		v = v<<4 | uint16(c)
	}
	return v
}

// numLit locates the parts of a number literal in the buffer.
type numLit struct {
	start, end   int
	neg          bool
	intA, intB   int
	fracA, fracB int
	expA, expB   int // digits only; the sign is expNeg
	expNeg       bool
}

// number validates the number at the cursor and moves past it.
func (s *jscan) number() (numLit, error) {
	b := s.buf
	i := s.pos
	n := numLit{start: i}
	if i < len(b) && b[i] == '-' {
		n.neg = true
		i++
	}
	n.intA = i
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		s.pos = i
		return n, s.unexpected("want a digit")
	}
	n.intB = i
	n.fracA, n.fracB = i, i
	if i < len(b) && b[i] == '.' {
		i++
		n.fracA = i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == n.fracA {
			s.pos = i
			return n, s.unexpected("want a digit after '.'")
		}
		n.fracB = i
	}
	n.expA, n.expB = i, i
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			n.expNeg = b[i] == '-'
			i++
		}
		n.expA = i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == n.expA {
			s.pos = i
			return n, s.unexpected("want a digit in the exponent")
		}
		n.expB = i
	}
	n.end = i
	s.pos = i
	return n, nil
}

// int64 returns the value of an integer literal (no fraction, no exponent)
// that fits in 18 digits.
func (n numLit) int64(b []byte) (int64, bool) {
	if n.fracA != n.fracB || n.expA != n.expB || n.intB-n.intA > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b[n.intA:n.intB] {
		v = v*10 + int64(c-'0')
	}
	if n.neg {
		v = -v
	}
	return v, true
}
