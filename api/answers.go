package api

import (
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcplens/mcplens/queries"
)

// emptyResults serves GET /api/v1/empty-results.
func (s *Server) emptyResults(c echo.Context) error {
	p := newParams(c.QueryParams(), "arg_key", "min_calls", "limit")
	f := p.filter(s.cfg.Now(), s.cfg.DefaultWindow)
	o := queries.EmptyResultsOptions{
		ArgKey:   p.str("arg_key"),
		MinCalls: p.integer("min_calls", 1, 1, 1<<40),
		Limit:    p.integer("limit", 100, 1, 10000),
	}
	if p.err != nil {
		return p.err
	}
	ctx, cancel := s.queryContext(c)
	defer cancel()
	rows, err := queries.EmptyResults(ctx, s.db, f, o)
	if err != nil {
		return err
	}
	return respond(c, f, rows)
}

// invalidArgumentSpikes serves GET /api/v1/invalid-argument-spikes.
func (s *Server) invalidArgumentSpikes(c echo.Context) error {
	p := newParams(c.QueryParams(), "step", "baseline", "min_calls")
	f := p.filter(s.cfg.Now(), s.cfg.DefaultWindow)
	o := queries.SpikeOptions{
		Step:     p.duration("step", time.Hour, time.Minute, 7*24*time.Hour),
		Baseline: p.duration("baseline", 7*24*time.Hour, time.Hour, 90*24*time.Hour),
		MinCalls: p.integer("min_calls", 20, 1, 1<<40),
	}
	if p.err == nil && int((f.To.Sub(f.From)+o.Baseline)/o.Step) > s.cfg.MaxBuckets {
		p.fail("step %s gives more than %d buckets over the range and baseline; use a larger step", o.Step, s.cfg.MaxBuckets)
	}
	if p.err != nil {
		return p.err
	}
	ctx, cancel := s.queryContext(c)
	defer cancel()
	rows, err := queries.InvalidArgumentSpikes(ctx, s.db, f, o)
	if err != nil {
		return err
	}
	return respond(c, f, rows)
}

// Overview is the one row of GET /api/v1/overview.
type Overview struct {
	queries.Totals
	TopFailingTools []queries.ToolFailures `json:"top_failing_tools"`
}

// overview serves GET /api/v1/overview.
func (s *Server) overview(c echo.Context) error {
	p := newParams(c.QueryParams())
	f := p.filter(s.cfg.Now(), s.cfg.DefaultWindow)
	if p.err != nil {
		return p.err
	}
	ctx, cancel := s.queryContext(c)
	defer cancel()
	totals, top, err := queries.Overview(ctx, s.db, f, 10)
	if err != nil {
		return err
	}
	return respond(c, f, []Overview{{Totals: totals, TopFailingTools: top}})
}
