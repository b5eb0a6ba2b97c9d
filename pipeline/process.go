package pipeline

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mcplens/mcplens/pipeline/classify"
)

// Processor turns capture lines into classified Calls: DecodeCapture, then
// the classifier. It holds no mutable state and is safe for concurrent use.
type Processor struct {
	Decode     DecodeOptions
	Classifier *classify.Classifier
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
	return c, nil
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
				emit(c)
				res.Accepted++
			} else if errors.Is(derr, ErrSkip) {
				res.Skipped++
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

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
