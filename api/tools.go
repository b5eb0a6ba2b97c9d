package api

import (
	"github.com/labstack/echo/v4"

	"github.com/mcplens/mcplens/queries"
)

// tools serves GET /api/v1/tools: the definition versions of the matching
// tools that matter for the range (seen in it, or in force when it starts),
// with when each was first and last seen and when it came into force.
func (s *Server) tools(c echo.Context) error {
	p := newParams(c.QueryParams())
	f := p.filter(s.cfg.Now(), s.cfg.DefaultWindow)
	if p.err != nil {
		return p.err
	}
	ctx, cancel := s.queryContext(c)
	defer cancel()
	rows, err := queries.ToolVersions(ctx, s.db, f)
	if err != nil {
		return err
	}
	return respond(c, f, rows)
}

// schemaViolations serves GET /api/v1/schema-violations: the paths at which
// calls failed their tool's schema, with how many of them the server
// refused as INVALID_ARGUMENT and how many it accepted.
func (s *Server) schemaViolations(c echo.Context) error {
	p := newParams(c.QueryParams(), "min_calls", "limit")
	f := p.filter(s.cfg.Now(), s.cfg.DefaultWindow)
	o := queries.SchemaViolationOptions{
		MinCalls: p.integer("min_calls", 1, 1, 1<<40),
		Limit:    p.integer("limit", 100, 1, 10000),
	}
	if p.err != nil {
		return p.err
	}
	ctx, cancel := s.queryContext(c)
	defer cancel()
	rows, err := queries.SchemaViolations(ctx, s.db, f, o)
	if err != nil {
		return err
	}
	return respond(c, f, rows)
}

// unknownTools serves GET /api/v1/unknown-tools: the tool names the servers
// refused as unknown, each with what it most likely is (a verdict) and the
// known tool it was probably meant to be.
func (s *Server) unknownTools(c echo.Context) error {
	p := newParams(c.QueryParams(), "limit")
	f := p.filter(s.cfg.Now(), s.cfg.DefaultWindow)
	o := queries.UnknownToolOptions{Limit: p.integer("limit", 100, 1, 1000)}
	if p.err != nil {
		return p.err
	}
	ctx, cancel := s.queryContext(c)
	defer cancel()
	rows, err := queries.UnknownTools(ctx, s.db, f, o)
	if err != nil {
		return err
	}
	return respond(c, f, rows)
}
