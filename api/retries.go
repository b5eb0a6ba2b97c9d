package api

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcplens/mcplens/queries"
)

// Bounds of the retry-chain parameters.
const (
	minRetryWindow = time.Second
	maxRetryWindow = time.Hour
	maxMinChains   = 1_000_000
)

// The retry-chain endpoints document themselves in the endpoint table that
// openapi.go builds the OpenAPI document from.
// retryWindow reads the optional retry_window parameter (a duration like
// 90s, or whole seconds), queries.DefaultRetryWindow when absent.
func retryWindow(p *params) time.Duration {
	return p.duration("retry_window", queries.DefaultRetryWindow, minRetryWindow, maxRetryWindow)
}

// retryOutcomes serves GET /api/v1/retry-outcomes: one row per (tool,
// category, declared_retryable, expected_retryable) of the retry chains that
// started in the range, with how they ended; with by=pair, per tenant and
// server too; with by=client, per client too.
func (s *Server) retryOutcomes(c echo.Context) error {
	p := newParams(c.QueryParams(), "retry_window", "by")
	f := p.filter(s.cfg.Now(), s.cfg.DefaultWindow)
	f.ByPair, f.ByClient = p.clientBy()
	window := retryWindow(p)
	if p.err != nil {
		return p.err
	}
	ctx, cancel := s.queryContext(c)
	defer cancel()
	rows, err := queries.RetryOutcomes(ctx, s.db, f, window)
	if err != nil {
		return err
	}
	return respondBy(c, f, rows, func(r queries.RetryOutcome) (string, string) { return r.Tenant, r.Server },
		func(r queries.RetryOutcome) string { return r.Client })
}

// recalls serves GET /api/v1/recalls: per (tool, category), the failed calls
// in the range and how many were re-sent unchanged within the retry window;
// with by=pair, per tenant and server too; with by=client, per client too.
func (s *Server) recalls(c echo.Context) error {
	p := newParams(c.QueryParams(), "retry_window", "by")
	f := p.filter(s.cfg.Now(), s.cfg.DefaultWindow)
	f.ByPair, f.ByClient = p.clientBy()
	window := retryWindow(p)
	if p.err != nil {
		return p.err
	}
	ctx, cancel := s.queryContext(c)
	defer cancel()
	rows, err := queries.Recalls(ctx, s.db, f, window)
	if err != nil {
		return err
	}
	return respondBy(c, f, rows, func(r queries.Recall) (string, string) { return r.Tenant, r.Server },
		func(r queries.Recall) string { return r.Client })
}

// Defaults and bounds of /retry-loops' parameters.
const (
	defaultMinAttempts = 5
	maxMinAttempts     = 1_000_000
	defaultLoopsLimit  = 50
)

// retryLoops serves GET /api/v1/retry-loops: the longest retry chains that
// started in the range, one row a chain with its session, client, calls and
// outcome, at least min_attempts calls each, the most calls first.
func (s *Server) retryLoops(c echo.Context) error {
	p := newParams(c.QueryParams(), "retry_window", "min_attempts", "limit")
	f := p.filter(s.cfg.Now(), s.cfg.DefaultWindow)
	window := retryWindow(p)
	o := queries.RetryLoopsOptions{
		MinAttempts: p.integer("min_attempts", defaultMinAttempts, 2, maxMinAttempts),
		Limit:       p.integer("limit", defaultLoopsLimit, 1, queries.MaxRetryLoopsLimit),
	}
	if p.err != nil {
		return p.err
	}
	ctx, cancel := s.queryContext(c)
	defer cancel()
	rows, err := queries.RetryLoops(ctx, s.db, f, window, o)
	if err != nil {
		return err
	}
	return respond(c, f, rows)
}

// misclassifications serves GET /api/v1/misclassifications: the (tool,
// category) pairs whose retry chains or isError flags contradict their
// classification, with at least min_chains chains (or misflagged calls);
// with by=pair, per tenant and server too, min_chains applying to each.
func (s *Server) misclassifications(c echo.Context) error {
	p := newParams(c.QueryParams(), "retry_window", "min_chains", "by")
	f := p.filter(s.cfg.Now(), s.cfg.DefaultWindow)
	f.ByPair = p.byPair()
	window := retryWindow(p)
	minChains := p.integer("min_chains", queries.DefaultMinChains, 0, maxMinChains)
	if p.err != nil {
		return p.err
	}
	ctx, cancel := s.queryContext(c)
	defer cancel()
	rows, err := queries.Misclassifications(ctx, s.db, f, window, minChains)
	if err != nil {
		return err
	}
	return respondByPair(c, f, rows, func(r queries.Misclassification) (string, string) { return r.Tenant, r.Server })
}

// headRow is a row of a chain endpoint asked with by=pair or by=client:
// the fields of head (its tenant and server, or its client), then the
// row's own.
type headRow[T any] struct {
	head any
	row  T
}

// MarshalJSON writes {head's fields, then the row's fields}.
func (r headRow[T]) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(r.head)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(r.row)
	if err != nil {
		return nil, err
	}
	if len(head) < 2 || head[0] != '{' || len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("head row: %T or %T is not a JSON object", r.head, r.row)
	}
	if len(body) == 2 {
		return head, nil
	}
	return append(append(head[:len(head)-1], ','), body[1:]...), nil
}

// respondBy is respondByPair, with each row's client (named by client)
// written first instead when the request asked for by=client.
func respondBy[T any](c echo.Context, f queries.Filter, rows []T, pair func(T) (tenant, server string), client func(T) string) error {
	if !f.ByClient {
		return respondByPair(c, f, rows, pair)
	}
	out := make([]headRow[T], len(rows))
	for i, r := range rows {
		out[i] = headRow[T]{head: struct {
			Client string `json:"client"`
		}{client(r)}, row: r}
	}
	return respond(c, f, out)
}

// respondByPair is respond, with each row's tenant and server (named by
// pair) written first when the request asked for by=pair.
func respondByPair[T any](c echo.Context, f queries.Filter, rows []T, pair func(T) (tenant, server string)) error {
	if !f.ByPair {
		return respond(c, f, rows)
	}
	out := make([]headRow[T], len(rows))
	for i, r := range rows {
		t, s := pair(r)
		out[i] = headRow[T]{head: struct {
			Tenant string `json:"tenant"`
			Server string `json:"server"`
		}{t, s}, row: r}
	}
	return respond(c, f, out)
}
