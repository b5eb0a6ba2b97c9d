package api

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcplens/mcplens/queries"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// maxFilterLen bounds tenant, server, tool and other string filters.
const maxFilterLen = 256

// params reads one request's query parameters. It rejects parameters the
// endpoint does not know, so that a typo ("tol=") is an error, not a silently
// unfiltered answer.
type params struct {
	q       url.Values
	allowed []string
	err     error
}

func newParams(q url.Values, extra ...string) *params {
	p := &params{q: q, allowed: append([]string{"from", "to", "tenant", "server", "tool"}, extra...)}
	for k, v := range q {
		if !slices.Contains(p.allowed, k) {
			p.fail("unknown parameter %q (this endpoint takes %s)", k, strings.Join(p.allowed, ", "))
		} else if len(v) > 1 {
			p.fail("parameter %q given %d times", k, len(v))
		}
	}
	return p
}

func (p *params) fail(format string, args ...any) {
	if p.err == nil {
		p.err = badParam(format, args...)
	}
}

func (p *params) str(name string) string {
	v := p.q.Get(name)
	if len(v) > maxFilterLen {
		p.fail("%s: longer than %d bytes", name, maxFilterLen)
		return ""
	}
	if !utf8.ValidString(v) {
		p.fail("%s: not valid UTF-8", name)
		return ""
	}
	return v
}

// filter parses from, to, tenant, server and tool.
func (p *params) filter(now time.Time, window time.Duration) queries.Filter {
	f := queries.Filter{To: now.UTC().Truncate(time.Second)}
	if v := p.q.Get("to"); v != "" {
		f.To = p.time("to", v)
	}
	f.From = f.To.Add(-window)
	if v := p.q.Get("from"); v != "" {
		f.From = p.time("from", v)
	}
	if p.err == nil && !f.From.Before(f.To) {
		p.fail("from (%s) must be before to (%s)", f.From.Format(time.RFC3339), f.To.Format(time.RFC3339))
	}
	f.Tenant, f.Server, f.Tool = p.str("tenant"), p.str("server"), p.str("tool")
	return f
}

// byPair reads the optional by parameter of the chain endpoints: "tool",
// the default, gives one row per tool (same-named tools of different
// tenants and servers added up), "pair" one per tenant, server and tool,
// each row naming its tenant and server (queries.Filter.ByPair).
func (p *params) byPair() bool {
	switch v := p.q.Get("by"); v {
	case "", "tool":
		return false
	case "pair":
		return true
	default:
		p.fail("by: want tool or pair, got %q", v)
		return false
	}
}

// clientBy reads the by of /recalls and /retry-outcomes: byPair's values,
// and "client", one row per client as well, each naming its client
// (queries.Filter.ByClient).
func (p *params) clientBy() (pair, client bool) {
	switch v := p.q.Get("by"); v {
	case "", "tool":
		return false, false
	case "pair":
		return true, false
	case "client":
		return false, true
	default:
		p.fail("by: want tool, pair or client, got %q", v)
		return false, false
	}
}

// time parses RFC 3339 or unix seconds.
func (p *params) time(name, v string) time.Time {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 || n > 1<<32 {
			p.fail("%s: unix seconds out of range: %d", name, n)
			return time.Time{}
		}
		return time.Unix(n, 0).UTC()
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		p.fail("%s: want RFC 3339 (2026-11-29T10:00:00Z) or unix seconds, got %q", name, v)
		return time.Time{}
	}
	if t.Year() < 1970 || t.Year() > 2105 {
		p.fail("%s: year %d out of range", name, t.Year())
		return time.Time{}
	}
	return t.UTC()
}

// duration parses a Go duration ("90s", "1h") or whole seconds ("60").
// It returns def when the parameter is absent.
func (p *params) duration(name string, def, min, max time.Duration) time.Duration {
	v := p.q.Get(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		n, err2 := strconv.ParseInt(v, 10, 64)
		if err2 != nil {
			p.fail("%s: want a duration like 60s or 1h, got %q", name, v)
			return def
		}
		d = time.Duration(n) * time.Second
	}
	if d < min || d > max {
		p.fail("%s: %s is outside [%s, %s]", name, d, min, max)
		return def
	}
	return d
}

// boolean parses an optional true/false parameter, nil when absent.
func (p *params) boolean(name string) *bool {
	var b bool
	switch v := p.q.Get(name); v {
	case "":
		if !p.q.Has(name) {
			return nil
		}
		p.fail("%s: want true or false, got an empty value", name)
		return nil
	case "true", "1":
		b = true
	case "false", "0":
	default:
		p.fail("%s: want true or false, got %q", name, v)
		return nil
	}
	return &b
}

// integer parses a bounded integer parameter, def when absent.
func (p *params) integer(name string, def, min, max int64) int64 {
	v := p.q.Get(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		p.fail("%s: want an integer, got %q", name, v)
		return def
	}
	if n < min || n > max {
		p.fail("%s: %d is outside [%d, %d]", name, n, min, max)
		return def
	}
	return n
}
