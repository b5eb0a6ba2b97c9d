package pipeline

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcplens/mcplens/pipeline/classify"
)

// Processor turns capture lines into classified Calls: DecodeCapture, then
// the classifier, then (with Tools) schema validation. It holds no mutable
// state of its own and is safe for concurrent use.
type Processor struct {
	Decode     DecodeOptions
	Classifier *classify.Classifier
	// Tools, when set, captures the definitions of tools/list lines and
	// validates every call against them (docs/schemas.md); nil skips
	// tools/list lines as other methods are skipped.
	Tools *Tools
}

// Apply copies the classifier's verdict into c.
func Apply(c *Call, r classify.Result, version string) {
	c.Category = string(r.Category)
	c.IsFailure = b2u(r.IsFailure)
	c.DeclaredRetryable = r.DeclaredRetryable
	c.ExpectedRetryable = r.ExpectedRetryable
	c.ClassSource = r.Source
	c.ClassRule = r.Rule
	c.ErrorCode = r.ErrorCode
	c.Misflagged = b2u(r.Misflagged)
	c.RetryAfterMs = r.RetryAfterMs
	c.TaxonomyVersion = version
}

// Line decodes and classifies one capture line. It returns ErrSkip for
// valid lines that are not tools/call.
func (p *Processor) Line(line []byte) (Call, error) {
	c, in, err := DecodeCapture(line, &p.Decode)
	if err != nil {
		return Call{}, err
	}
	Apply(&c, p.Classifier.Classify(&in), p.Classifier.Version())
	if p.Tools != nil {
		p.Tools.Check(&c, &in)
	}
	return c, nil
}

// toolsList captures the definitions of a tools/list line that Line
// skipped: ok reports that it did, and err rejects the line.
func (p *Processor) toolsList(line []byte) (ok bool, err error) {
	if p.Tools == nil || !isToolsList(line) {
		return false, nil
	}
	defs, err := DecodeToolsList(line, &p.Decode)
	if errors.Is(err, ErrSkip) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	p.Tools.Observe(defs, ToolSourceCapture)
	return true, nil
}

// LineError is a rejected line of an NDJSON body.
type LineError struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// Result summarises one NDJSON body.
type Result struct {
	Accepted int         `json:"accepted"`
	Skipped  int         `json:"skipped"`
	Rejected int         `json:"rejected"`
	Errors   []LineError `json:"errors"`
	// ToolLists counts tools/list lines whose definitions were captured
	// (Processor.Tools); they are neither accepted calls nor skipped.
	ToolLists int `json:"tool_lists,omitempty"`
	// Capped counts accepted lines whose exploded arguments (arg_keys,
	// arg_values) were cut by MaxArgs or MaxValueBytes; args_json keeps
	// the arguments whole.
	Capped int `json:"capped,omitempty"`
}

// MaxReportedErrors caps the per-line errors returned in one Result; every
// rejected line is still counted and dead-lettered.
const MaxReportedErrors = 100

// ReadNDJSON decodes every line of r. Accepted calls go to calls, rejected
// lines to dead (with their reason); blank lines are ignored. A line longer
// than the decoder's MaxLineBytes is rejected without stopping the body. It
// stops only on a read error of r itself (e.g. a truncated gzip stream or a
// body over its size limit), which it returns; the caller decides what the
// lines read so far are worth.
func (p *Processor) ReadNDJSON(r io.Reader, tenant string, now time.Time, emit func(Call), dead func(DeadLetter)) (Result, error) {
	res := Result{Errors: []LineError{}}
	maxLine := p.Decode.MaxLineBytes
	if maxLine <= 0 {
		maxLine = 1 << 20
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for lineNo := 1; ; lineNo++ {
		line, tooLong, err := readLine(br, buf[:0], maxLine)
		buf = line
		if err != nil && err != io.EOF {
			return res, err
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) > 0 || tooLong {
			var reason string
			if tooLong {
				reason = fmt.Sprintf("line exceeds %d bytes", maxLine)
			} else if c, derr := p.Line(trimmed); derr == nil {
				if argsCapped(&c, &p.Decode) {
					res.Capped++
				}
				emit(c)
				res.Accepted++
			} else if errors.Is(derr, ErrSkip) {
				if ok, terr := p.toolsList(trimmed); terr != nil {
					reason = terr.Error()
				} else if ok {
					res.ToolLists++
				} else {
					res.Skipped++
				}
			} else {
				reason = derr.Error()
			}
			if reason != "" {
				res.Rejected++
				if len(res.Errors) < MaxReportedErrors {
					res.Errors = append(res.Errors, LineError{Line: lineNo, Reason: reason})
				}
				dead(DeadLetter{Received: now, Tenant: tenant, Source: "capture", Line: uint32(lineNo),
					Reason: reason, Payload: string(trimmed[:min(len(trimmed), MaxDeadLetterPayload)])})
			}
		}
		if err == io.EOF {
			return res, nil
		}
	}
}

// readLine reads one '\n'-terminated line into buf, keeping at most max
// bytes; tooLong reports that the rest of the line was discarded.
func readLine(br *bufio.Reader, buf []byte, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > max {
			tooLong = true
			keep := max - len(buf)
			if keep > 0 {
				buf = append(buf, chunk[:keep]...)
			}
		} else {
			buf = append(buf, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return buf, tooLong, err
	}
}

// argsCapped reports whether the exploded arguments of c were cut: as many
// entries as MaxArgs allows, or a key or value ending in the marker that
// appendCapped writes ("…#" and 16 hex digits).
func argsCapped(c *Call, o *DecodeOptions) bool {
	maxArgs := defaultMaxArgs
	if o.MaxArgs > 0 {
		maxArgs = o.MaxArgs
	}
	if len(c.ArgKeys) >= maxArgs {
		return true
	}
	for _, list := range [2][]string{c.ArgKeys, c.ArgValues} {
		for _, v := range list {
			if len(v) >= cappedMarkerLen && strings.HasPrefix(v[len(v)-cappedMarkerLen:], "…#") && isHexDigits(v[len(v)-16:]) {
				return true
			}
		}
	}
	return false
}

func isHexDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
