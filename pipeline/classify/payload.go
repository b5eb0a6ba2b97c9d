package classify

import (
	"bytes"
	"math"
	"strconv"
	"time"
)

// The explicit stage reads structured error fields from raw JSON without
// decoding it: a small scanner walks the top-level object (and a nested
// `error` object) and skips every other value. It never allocates on the
// common path and gives up silently on malformed input, keeping what it
// found so far.

const (
	maxPayload  = 64 << 10 // bytes of one payload that are scanned
	maxCodeLen  = 48       // longer "codes" are messages, not codes
	maxDepth    = 3        // nesting followed into error, data, hits and result
	maxCands    = 8
	maxMessages = 4
	maxRetryMs  = int64(7 * 24 * time.Hour / time.Millisecond)
)

// jval is one JSON value found by the scanner.
type jval struct {
	kind  byte   // '"' string, '0' number, 't' true, 'f' false, 'n' null, '{' object, '[' array
	raw   []byte // string: contents without quotes; others: the value's text
	esc   bool   // string contains escapes
	empty bool   // object or array without members
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// str reads a string starting at the opening quote.
func (s *scanner) str() (raw []byte, esc, ok bool) {
	i := s.i + 1
	start := i
	for i < len(s.b) {
		switch s.b[i] {
		case '\\':
			esc = true
			i += 2
			continue
		case '"':
			s.i = i + 1
			return s.b[start:i], esc, true
		}
		i++
	}
	s.i = len(s.b)
	return nil, esc, false
}

// value reads one value; ok is false on malformed or truncated input.
func (s *scanner) value() (v jval, ok bool) {
	s.ws()
	if s.i >= len(s.b) {
		return v, false
	}
	start := s.i
	switch c := s.b[s.i]; c {
	case '"':
		raw, esc, ok := s.str()
		return jval{kind: '"', raw: raw, esc: esc}, ok
	case '{', '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		j := s.i + 1
		for j < len(s.b) && (s.b[j] == ' ' || s.b[j] == '\t' || s.b[j] == '\n' || s.b[j] == '\r') {
			j++
		}
		empty := j < len(s.b) && s.b[j] == closer
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, _, ok := s.str(); !ok {
					return v, false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return jval{kind: c, raw: s.b[start:s.i], empty: empty}, true
				}
			}
			s.i++
		}
		return v, false
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ':', ' ', '\t', '\n', '\r', '"', '{', '[':
			goto done
		}
		s.i++
	}
done:
	lit := s.b[start:s.i]
	switch {
	case len(lit) == 0:
		return v, false
	case string(lit) == "true":
		return jval{kind: 't', raw: lit}, true
	case string(lit) == "false":
		return jval{kind: 'f', raw: lit}, true
	case string(lit) == "null":
		return jval{kind: 'n', raw: lit}, true
	case lit[0] == '-' || isDigit(lit[0]):
		return jval{kind: '0', raw: lit}, true
	}
	return v, false
}

// parseValue reads a whole payload as one value.
func parseValue(b []byte) (jval, bool) {
	if len(b) > maxPayload {
		b = b[:maxPayload]
	}
	s := scanner{b: b}
	return s.value()
}

// objIter walks the members of an object value.
type objIter struct {
	s       scanner
	started bool
	key     []byte
	val     jval
}

func (it *objIter) next() bool {
	s := &it.s
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	if !it.started {
		if s.b[s.i] != '{' {
			return false
		}
		it.started = true
	} else if s.b[s.i] != ',' {
		return false
	}
	s.i++
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	key, _, ok := s.str()
	if !ok {
		return false
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return false
	}
	s.i++
	v, ok := s.value()
	if !ok {
		return false
	}
	it.key, it.val = key, v
	return true
}

// firstElem returns the first element of an array value.
func firstElem(arr jval) (jval, bool) {
	if arr.kind != '[' || arr.empty {
		return jval{}, false
	}
	s := scanner{b: arr.raw, i: 1}
	return s.value()
}

// Emptiness of a payload.
const (
	emptyUnknown int8 = iota
	emptyYes
	emptyNo
)

// cand is one explicit code found in a payload.
type cand struct {
	raw     []byte // as sent (string contents or number text)
	norm    [maxCodeLen]byte
	nlen    uint8
	rank    uint8 // key precedence: 0 errorCode … 5 category; lower wins
	strong  bool  // an unknown value of this key is still a code (UNCLASSIFIED)
	status  bool  // from a status key: counts only in an error context
	inError bool  // found inside an error object or error.data
}

func (c *cand) normalized() []byte { return c.norm[:c.nlen] }

type msgRef struct {
	raw []byte
	esc bool
}

// explicitInfo collects what the explicit stage found in all payloads.
type explicitInfo struct {
	cands        [maxCands]cand
	nc           int
	flag         bool // the payload says it failed: error: true, success: false, …
	retry        int8 // retryable field; RetryUnknown when absent
	retryAfterMs int64
	msgs         [maxMessages]msgRef // error messages, read by the text stage on failures
	nm           int
	texts        [2]msgRef // a structured payload that is a plain string
	nt           int
}

// payload kinds
const (
	fromStructured = iota
	fromMeta
	fromErrorData
)

// analyze reads one raw payload. It returns the payload's emptiness (only
// meaningful for structured content).
func (x *explicitInfo) analyze(b []byte, from int) int8 {
	v, ok := parseValue(b)
	if !ok {
		// A truncated or malformed object: keep the members that can be
		// read, but do not call it empty.
		t := bytes.TrimLeft(b, " \t\r\n")
		if len(t) > maxPayload {
			t = t[:maxPayload]
		}
		if len(t) > 0 && t[0] == '{' {
			x.object(jval{kind: '{', raw: t}, from, from == fromErrorData, 0)
		}
		return emptyUnknown
	}
	return x.top(v, from, 0)
}

func (x *explicitInfo) top(v jval, from, depth int) int8 {
	switch v.kind {
	case '{':
		if v.empty {
			return emptyYes
		}
		return x.object(v, from, from == fromErrorData, depth)
	case '[':
		if v.empty {
			return emptyYes
		}
		return emptyNo
	case 'n':
		return emptyYes
	case '"':
		if from == fromErrorData {
			x.addMsg(v)
			return emptyUnknown
		}
		if isBlank(v.raw) {
			return emptyYes
		}
		if x.nt < len(x.texts) {
			x.texts[x.nt] = msgRef{v.raw, v.esc}
			x.nt++
		}
		return emptyNo
	}
	return emptyNo
}

// object reads the members of an object. inError is true inside an error
// object and in error.data.
func (x *explicitInfo) object(v jval, from int, inError bool, depth int) int8 {
	it := objIter{s: scanner{b: v.raw}}
	var members, lists, emptyLists, counts, zeroCounts int
	var result jval
	for it.next() {
		members++
		key, val := it.key, it.val
		if from == fromMeta {
			if j := bytes.LastIndexByte(key, '/'); j >= 0 {
				key = key[j+1:]
			}
		}
		switch string(key) {
		case "errorCode", "error_code", "errorcode", "ErrorCode", "errCode", "err_code":
			x.addCode(val, 0, true, false, inError)
		case "code":
			rank := uint8(2)
			if inError {
				rank = 1
			}
			x.addCode(val, rank, true, false, inError)
		case "status", "statusCode", "status_code", "httpStatus", "http_status":
			if val.kind == '"' && failStatus(val.raw) {
				x.flag = true
				continue
			}
			x.addCode(val, 3, inError, true, inError)
		case "reason", "errorReason", "error_reason":
			if val.kind == '"' {
				x.addCode(val, 4, false, false, inError)
			}
		case "category", "errorCategory", "error_category", "errorType", "error_type":
			if val.kind == '"' {
				x.addCode(val, 5, false, false, inError)
			}
		case "type":
			if inError && val.kind == '"' {
				x.addCode(val, 5, false, false, inError)
			}
		case "error", "err":
			switch val.kind {
			case 't':
				x.flag = true
			case '"':
				if t := bytes.TrimSpace(val.raw); len(t) > 0 && !oneOfFold(t, "none", "null", "nil", "false", "no", "ok", "0") {
					x.flag = true
					x.addMsg(val)
				}
			case '{':
				if !val.empty {
					x.flag = true
					if depth < maxDepth {
						x.object(val, from, true, depth+1)
					}
				}
			case '[':
				if !val.empty {
					x.flag = true
				}
			}
		case "errors":
			if val.kind == '[' && !val.empty {
				x.flag = true
				if e, ok := firstElem(val); ok {
					switch {
					case e.kind == '"':
						x.addMsg(e)
					case e.kind == '{' && depth < maxDepth:
						x.object(e, from, true, depth+1)
					}
				}
			}
		case "success", "ok", "succeeded":
			if val.kind == 'f' {
				x.flag = true
			}
		case "isError", "is_error", "failed", "hasError", "has_error":
			if val.kind == 't' {
				x.flag = true
			}
		case "retryable", "retriable", "isRetryable", "is_retryable", "retrySafe", "retry_safe":
			if x.retry == RetryUnknown {
				x.retry = parseBool(val)
			}
		case "retryAfter", "retry_after", "retry-after", "Retry-After", "retryAfterSeconds", "retry_after_seconds", "retryDelay", "retry_delay":
			x.setRetryAfter(val, 1000)
		case "retryAfterMs", "retry_after_ms", "retryAfterMillis", "retry_after_millis":
			x.setRetryAfter(val, 1)
		case "message", "msg", "detail", "details", "description":
			if val.kind == '"' && (key[0] != 'd' || key[1] != 'e' || key[2] != 's' || inError) {
				x.addMsg(val)
			}
		case "errorMessage", "error_message", "errMsg", "errmsg", "error_description", "errorDescription":
			if val.kind == '"' && !isBlank(val.raw) {
				x.flag = true
				x.addMsg(val)
			}
		case "result":
			result = val
		}
		if from != fromStructured || inError {
			continue
		}
		switch string(key) {
		case "results", "items", "data", "documents", "docs", "hits", "records", "rows", "matches", "entries", "files", "list":
			switch val.kind {
			case '[':
				lists++
				if val.empty {
					emptyLists++
				}
			case 'n':
				lists++
				emptyLists++
			case '{':
				if depth < maxDepth && (key[0] == 'd' || key[0] == 'h') { // data, hits: a wrapper object
					switch x.emptiness(val, depth+1) {
					case emptyYes:
						lists++
						emptyLists++
					case emptyNo:
						lists++
					}
				}
			}
		case "count", "total", "total_count", "totalCount", "num_results", "numResults", "result_count",
			"resultCount", "total_hits", "totalHits", "totalResults", "total_results", "matched":
			if n, ok := countValue(val); ok {
				counts++
				if n == 0 {
					zeroCounts++
				}
			}
		}
	}
	if from != fromStructured || inError {
		return emptyUnknown
	}
	switch {
	case members == 1 && result.kind != 0:
		// TypeScript SDK v2 wraps a non-object structuredContent as
		// {result: …} for 2025-era clients.
		if depth < maxDepth {
			return x.top(result, from, depth+1)
		}
		return emptyUnknown
	case lists > 0:
		if emptyLists == lists && zeroCounts == counts {
			return emptyYes
		}
		return emptyNo
	case counts > 0:
		if zeroCounts == counts {
			return emptyYes
		}
		return emptyNo
	}
	return emptyNo
}

// emptiness reads only the result lists and counts of a wrapper object
// such as {"data": {"items": []}} or Elasticsearch's {"hits": {…}}.
func (x *explicitInfo) emptiness(v jval, depth int) int8 {
	if v.empty {
		return emptyYes
	}
	it := objIter{s: scanner{b: v.raw}}
	var lists, emptyLists, counts, zeroCounts int
	for it.next() {
		val := it.val
		switch string(it.key) {
		case "results", "items", "data", "documents", "docs", "hits", "records", "rows", "matches", "entries", "files", "list":
			switch val.kind {
			case '[':
				lists++
				if val.empty {
					emptyLists++
				}
			case 'n':
				lists++
				emptyLists++
			case '{':
				if depth < maxDepth {
					switch x.emptiness(val, depth+1) {
					case emptyYes:
						lists++
						emptyLists++
					case emptyNo:
						lists++
					}
				}
			}
		case "count", "total", "total_count", "totalCount", "num_results", "numResults", "result_count",
			"resultCount", "total_hits", "totalHits", "totalResults", "total_results":
			if n, ok := countValue(val); ok {
				counts++
				if n == 0 {
					zeroCounts++
				}
			}
		}
	}
	switch {
	case lists > 0:
		if emptyLists == lists && zeroCounts == counts {
			return emptyYes
		}
		return emptyNo
	case counts > 0:
		if zeroCounts == counts {
			return emptyYes
		}
		return emptyNo
	}
	return emptyUnknown
}

// countValue reads a count: a number, a numeric string, or Elasticsearch's
// {"value": n}.
func countValue(v jval) (float64, bool) {
	switch v.kind {
	case '0', '"':
		f, err := strconv.ParseFloat(string(v.raw), 64)
		return f, err == nil && f >= 0
	case '{':
		it := objIter{s: scanner{b: v.raw}}
		for it.next() {
			if string(it.key) == "value" && it.val.kind == '0' {
				return countValue(it.val)
			}
		}
	}
	return 0, false
}

func (x *explicitInfo) addMsg(v jval) {
	if v.kind == '"' && len(v.raw) > 0 && x.nm < len(x.msgs) {
		x.msgs[x.nm] = msgRef{v.raw, v.esc}
		x.nm++
	}
}

// addCode records a code value unless it is empty, too long, negative (a
// JSON-RPC code, which the jsonrpc stage reads from the envelope) or a
// success code (0, 2xx, OK, SUCCESS).
func (x *explicitInfo) addCode(v jval, rank uint8, strong, status, inError bool) {
	if x.nc >= len(x.cands) {
		return
	}
	c := &x.cands[x.nc]
	var n []byte
	switch v.kind {
	case '"':
		raw := bytes.TrimSpace(v.raw)
		if len(raw) == 0 || len(raw) > maxCodeLen || raw[0] == '-' {
			return
		}
		c.raw = raw
		n = appendNormCode(c.norm[:0], raw)
	case '0':
		f, err := strconv.ParseFloat(string(v.raw), 64)
		if err != nil || f < 0 || f != math.Trunc(f) || f > 1e15 {
			return
		}
		c.raw = v.raw
		n = strconv.AppendInt(c.norm[:0], int64(f), 10)
	default:
		return
	}
	if len(n) == 0 || len(n) > maxCodeLen || successCode(n) {
		return
	}
	for i := 0; i < x.nc; i++ {
		if bytes.Equal(x.cands[i].normalized(), n) {
			return
		}
	}
	c.nlen = uint8(len(n))
	c.rank, c.strong, c.status, c.inError = rank, strong, status, inError
	x.nc++
	// Keep candidates ordered by rank (stable).
	for i := x.nc - 1; i > 0 && x.cands[i-1].rank > x.cands[i].rank; i-- {
		x.cands[i-1], x.cands[i] = x.cands[i], x.cands[i-1]
	}
}

func successCode(n []byte) bool {
	switch string(n) {
	case "0", "OK", "SUCCESS", "SUCCEEDED", "SUCCESSFUL", "NONE", "NULL", "NIL", "FALSE", "COMPLETE", "COMPLETED", "DONE":
		return true
	}
	return len(n) == 3 && n[0] == '2' && isDigit(n[1]) && isDigit(n[2])
}

// failStatus reports whether a status string says the call failed.
func failStatus(raw []byte) bool {
	return oneOfFold(bytes.TrimSpace(raw), "error", "err", "failed", "failure", "fail")
}

// oneOfFold reports whether b equals one of words, ignoring ASCII case.
func oneOfFold(b []byte, words ...string) bool {
	for _, w := range words {
		if len(b) == len(w) && bytes.EqualFold(b, []byte(w)) {
			return true
		}
	}
	return false
}

func parseBool(v jval) int8 {
	switch v.kind {
	case 't':
		return RetryYes
	case 'f':
		return RetryNo
	case '"':
		switch t := bytes.TrimSpace(v.raw); {
		case oneOfFold(t, "true", "yes", "1"):
			return RetryYes
		case oneOfFold(t, "false", "no", "0"):
			return RetryNo
		}
	}
	return RetryUnknown
}

// setRetryAfter reads a retry-after hint; unit is the milliseconds per unit
// of a plain number (1000 for keys in seconds, 1 for keys in ms). A string
// may also be a Go duration such as "30s" (Google's RetryInfo uses that
// form).
func (x *explicitInfo) setRetryAfter(v jval, unit float64) {
	if x.retryAfterMs > 0 {
		return
	}
	var ms float64
	switch v.kind {
	case '0', '"':
		s := string(bytes.TrimSpace(v.raw))
		f, err := strconv.ParseFloat(s, 64)
		if err == nil {
			ms = f * unit
			break
		}
		if v.kind != '"' {
			return
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return
		}
		ms = float64(d / time.Millisecond)
	default:
		return
	}
	if !(ms > 0) || ms > float64(maxRetryMs) {
		return
	}
	x.retryAfterMs = max(int64(ms), 1)
}

// appendNormCode appends the comparison form of an explicit code:
// uppercase letters and digits only (other ASCII dropped, non-ASCII kept),
// without a trailing ERROR or EXCEPTION. RATE_LIMITED, rate-limited,
// RateLimited and RateLimitedError all become RATELIMITED.
func appendNormCode[T string | []byte](dst []byte, s T) []byte {
	start := len(dst)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z':
			dst = append(dst, c-'a'+'A')
		case 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c >= 0x80:
			dst = append(dst, c)
		}
	}
	n := dst[start:]
	if len(n) > len("EXCEPTION") && string(n[len(n)-len("EXCEPTION"):]) == "EXCEPTION" {
		dst = dst[:len(dst)-len("EXCEPTION")]
	} else if len(n) > len("ERROR") && string(n[len(n)-len("ERROR"):]) == "ERROR" {
		dst = dst[:len(dst)-len("ERROR")]
	}
	return dst
}

func normalizeCode(s string) string {
	return string(appendNormCode(nil, s))
}
