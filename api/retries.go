package api

import (
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
// started in the range, with how they ended.
func (s *Server) retryOutcomes(c echo.Context) error {
	p := newParams(c.QueryParams(), "retry_window")
	f := p.filter(s.cfg.Now(), s.cfg.DefaultWindow)
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
	return respond(c, f, rows)
}

// recalls serves GET /api/v1/recalls: per (tool, category), the failed calls
// in the range and how many were re-sent unchanged within the retry window.
func (s *Server) recalls(c echo.Context) error {
	p := newParams(c.QueryParams(), "retry_window")
	f := p.filter(s.cfg.Now(), s.cfg.DefaultWindow)
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
	return respond(c, f, rows)
}

// misclassifications serves GET /api/v1/misclassifications: the (tool,
// category) pairs whose retry chains or isError flags contradict their
// classification, with at least min_chains chains (or misflagged calls).
func (s *Server) misclassifications(c echo.Context) error {
	p := newParams(c.QueryParams(), "retry_window", "min_chains")
	f := p.filter(s.cfg.Now(), s.cfg.DefaultWindow)
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
	return respond(c, f, rows)
}
