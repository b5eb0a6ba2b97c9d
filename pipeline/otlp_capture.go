package pipeline

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/mcplens/mcplens/pipeline/classify"
)

// Nesting of the values a span carries inside the capture line that
// traceDecoder.line writes for it: the arguments sit in the line's
// request.params, the result in its response. Their own nesting counts
// from there, so that MaxDepth limits them as it limits that line.
const (
	argsDepth   = 3 // line, request, params
	resultDepth = 2 // line, response
)

// decodeFacts returns what DecodeCapture returns for the capture line that
// traceDecoder.line writes for f, without writing and reading that line:
// the line's names, ids, time and error codes are set as the decoder would
// read them (invalid UTF-8 becomes U+FFFD, messages are cut at the same
// limit), and only the JSON that the span carried (its arguments and its
// result), or the result made of its flags and texts, is read, by the same
// code. buf is scratch space for that made result. Both paths are held
// equal by TestDecodeFactsIsTheCaptureLine and FuzzDecodeFacts.
func decodeFacts(f *spanFacts, opts *DecodeOptions, lim decodeLimits, buf *[]byte) (Call, classify.Input, error) {
	st := getState()
	defer putState(st)
	d := capDecoder{decodeState: st, lim: lim}
	d.reset()
	if f.timeMs >= 0 && f.timeMs < maxTimeMs {
		d.hasTime, d.timeMs = true, f.timeMs
	} else {
		d.setTime(appendTimeMillis(nil, f.timeMs)) // records the line's error
	}
	if f.durMs >= 0 {
		d.duration = f.durMs
	}
	d.tenant = d.text(&d.arena, f.tenant)
	d.server = d.text(&d.arena, f.server)
	d.session = d.text(&d.arena, f.session)
	d.client = d.text(&d.arena, f.client)
	d.protoVer = d.text(&d.arena, f.proto)
	if !f.trace.IsEmpty() {
		a := len(d.arena)
		d.arena = appendHexBytes(d.arena, f.trace[:])
		d.traceID = span{a, len(d.arena), true}
	}
	if f.noResp {
		d.localErr = d.text(&d.iarena, f.localErr)
	}

	d.hasRequest, d.req.hasMethod, d.req.toolsCall, d.req.hasParams = true, true, true, true
	d.req.id = d.present(&d.arena, f.reqID)
	d.req.name = d.present(&d.arena, f.tool)
	if f.argsKind == argsJSON {
		d.s = jscan{buf: stringBytes(f.args), depth: argsDepth, maxDepth: lim.maxDepth, kbuf: d.s.kbuf}
		d.canon.reset()
		if err := d.canon.value(&d.s); err != nil {
			return Call{}, classify.Input{}, err
		}
		if err := d.whole("arguments"); err != nil {
			return Call{}, classify.Input{}, err
		}
		d.req.args = true
	}

	switch {
	case f.noResp:
	case f.rpcErr:
		d.hasResp = true
		r := &d.resp
		r.hasError, r.rpcCode = true, f.rpcCode
		a := len(d.iarena)
		d.iarena = appendDecoded(d.iarena, f.rpcMsg)
		d.iarena = d.iarena[:a+utf8Cut(d.iarena[a:], classifierTextBytes)]
		r.rpcMessage = span{a, len(d.iarena), true}
	default:
		d.hasResp = true
		raw := stringBytes(f.result)
		if f.result == "" {
			*buf = appendFlagsResult((*buf)[:0], f)
			raw = *buf
		}
		if err := d.readResult(raw); err != nil {
			return Call{}, classify.Input{}, err
		}
	}
	return d.finish(opts)
}

// readResult reads raw as the value of the line's response.result.
func (d *capDecoder) readResult(raw []byte) error {
	d.s = jscan{buf: raw, depth: resultDepth, maxDepth: d.lim.maxDepth, kbuf: d.s.kbuf}
	if err := d.result(); err != nil {
		return err
	}
	if err := d.whole("result"); err != nil {
		return err
	}
	if !d.resp.hasResult {
		d.fail(`response: want "result" or "error"`)
	}
	return nil
}

// whole reports an error unless the value just read was all of d.s.
func (d *capDecoder) whole(what string) error {
	d.s.ws()
	if d.s.pos < len(d.s.buf) {
		return errors.New(what + ": " + d.s.unexpected("want the end of the value").Error())
	}
	return nil
}

// text appends v to arena as the decoder reads it from a JSON string, and
// returns its span; an empty v is absent, as the line omits it.
func (d *capDecoder) text(arena *[]byte, v string) span {
	if v == "" {
		return span{}
	}
	return d.present(arena, v)
}

// present is text for a field the line always writes, even when empty.
func (d *capDecoder) present(arena *[]byte, v string) span {
	a := len(*arena)
	*arena = appendDecoded(*arena, v)
	return span{a, len(*arena), true}
}

// appendDecoded appends s as the decoder reads it back from the JSON
// string that appendJSONString writes: unchanged, except that each byte
// of invalid UTF-8 becomes U+FFFD. appendUnescaped does that replacement;
// it would read a backslash as an escape, so s goes to it in the pieces
// between its backslashes (a backslash is never part of a UTF-8 sequence).
func appendDecoded(dst []byte, s string) []byte {
	if utf8.ValidString(s) {
		return append(dst, s...)
	}
	for {
		i := strings.IndexByte(s, '\\')
		if i < 0 {
			return appendUnescaped(dst, stringBytes(s))
		}
		dst = append(appendUnescaped(dst, stringBytes(s[:i])), '\\')
		s = s[i+1:]
	}
}
