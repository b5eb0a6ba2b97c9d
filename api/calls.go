package api

import (
	"math"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/mcplens/mcplens/pipeline/classify"
	"github.com/mcplens/mcplens/queries"
)

// callsParams are the parameters of GET /api/v1/calls beyond the common ones.
var callsParams = []param{
	{"category", "string", "", "only calls of this category (their latest ingest's)"},
	{"failed", "boolean", "", "only failed (true) or not failed (false) calls"},
	{"misflagged", "boolean", "", "only calls whose isError contradicts their category (true), or only the others (false)"},
	{"code", "integer", "", "only calls with this JSON-RPC error code (0: not a JSON-RPC error), as failure-rates' code"},
	{"session", "string", "", "only this session key (the session id, else the trace id; docs/analytics.md)"},
	{"trace_id", "string", "", "only calls of this trace"},
	{"arg_key", "string", "", "only calls with this argument key (top-level, nested keys dotted), as empty-results' arg_key"},
	{"arg_value", "string", "", "with arg_key: only calls where that key has this value"},
	{"limit", "integer", "", "calls a page holds, 1 to 1000 (default 50); a shorter page is the last"},
	{"before", "string", "", "the cursor of the last row of the previous page: the calls after it"},
}

// calls serves GET /api/v1/calls: the calls behind an answer's numbers,
// newest first, each as its latest ingest classified it, with what the
// classification was derived from.
func (s *Server) calls(c echo.Context) error {
	names := make([]string, len(callsParams))
	for i, cp := range callsParams {
		names[i] = cp.name
	}
	p := newParams(c.QueryParams(), names...)
	f := p.filter(s.cfg.Now(), s.cfg.DefaultWindow)
	o := queries.CallsOptions{
		Category:   p.str("category"),
		Failed:     p.boolean("failed"),
		Misflagged: p.boolean("misflagged"),
		Session:    p.str("session"),
		TraceID:    p.str("trace_id"),
		ArgKey:     p.str("arg_key"),
		Limit:      p.integer("limit", 50, 1, queries.MaxCallsLimit),
	}
	if o.Category != "" && !slices.Contains(categoryNames(), o.Category) {
		p.fail("category: %q is not a category (%s)", o.Category, strings.Join(categoryNames(), ", "))
	}
	if p.q.Has("code") {
		if p.q.Get("code") == "" {
			p.fail("code: want an integer, got an empty value")
		}
		code := p.integer("code", 0, math.MinInt64, math.MaxInt64)
		o.Code = &code
	}
	if p.q.Has("arg_value") {
		if o.ArgKey == "" {
			p.fail("arg_value: give arg_key too")
		}
		v := p.str("arg_value")
		o.ArgValue = &v
	}
	if v := p.q.Get("before"); v != "" {
		cur, err := queries.ParseCursor(v)
		if err != nil {
			p.fail("before: %v, got %q", err, v)
		}
		o.Before = &cur
	}
	if p.err != nil {
		return p.err
	}
	ctx, cancel := s.queryContext(c)
	defer cancel()
	rows, err := queries.CallList(ctx, s.db, f, o)
	if err != nil {
		return err
	}
	return respond(c, f, rows)
}

// categoryNames lists the taxonomy's categories (docs/taxonomy.md).
func categoryNames() []string {
	out := make([]string, len(classify.Categories))
	for i, c := range classify.Categories {
		out[i] = string(c)
	}
	return out
}
