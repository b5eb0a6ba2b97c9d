package api

import (
	"context"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/labstack/echo/v4"

	"github.com/mcplens/mcplens/queries"
)

func (s *Server) routes(g *echo.Group) {
	g.GET("/failure-rates", s.failureRates)
	g.GET("/empty-results", s.emptyResults)
	g.GET("/invalid-argument-spikes", s.invalidArgumentSpikes)
	g.GET("/overview", s.overview)
	g.GET("/retry-outcomes", s.retryOutcomes)
	g.GET("/recalls", s.recalls)
	g.GET("/retry-loops", s.retryLoops)
	g.GET("/misclassifications", s.misclassifications)
	g.GET("/tools", s.tools)
	g.GET("/schema-violations", s.schemaViolations)
	g.GET("/unknown-tools", s.unknownTools)
	g.GET("/calls", s.calls)
	g.GET("/openapi.json", serveOpenAPI)
}

// queryContext bounds one request's queries: a deadline, and on ClickHouse
// servers the settings max_execution_time and max_memory_usage, so that a
// query over a too-wide range fails (503, "narrow the range") instead of
// starving the server. The in-process test engine ignores the settings.
func (s *Server) queryContext(c echo.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.cfg.QueryTimeout)
	settings := clickhouse.Settings{"max_execution_time": int(max(s.cfg.QueryTimeout/time.Second, 1))}
	if s.cfg.MaxQueryMemory > 0 {
		settings["max_memory_usage"] = int(s.cfg.MaxQueryMemory) // 18.16 takes int and bool settings only
	}
	return clickhouse.Context(ctx, clickhouse.WithSettings(settings)), cancel
}

// step reads the optional step parameter and checks the bucket count.
func (s *Server) step(p *params, f queries.Filter) time.Duration {
	step := p.duration("step", 0, time.Minute, 31*24*time.Hour)
	if step > 0 && p.err == nil && int(f.To.Sub(f.From)/step) > s.cfg.MaxBuckets {
		p.fail("step %s gives more than %d buckets over the range; use a larger step", step, s.cfg.MaxBuckets)
	}
	return step
}

// failureRates serves GET /api/v1/failure-rates: one row per (tool,
// category, code) among failures; with step, one per bucket too ("time").
func (s *Server) failureRates(c echo.Context) error {
	p := newParams(c.QueryParams(), "step")
	f := p.filter(s.cfg.Now(), s.cfg.DefaultWindow)
	step := s.step(p, f)
	if p.err != nil {
		return p.err
	}
	ctx, cancel := s.queryContext(c)
	defer cancel()
	rows, err := queries.FailureRates(ctx, s.db, f, step)
	if err != nil {
		return err
	}
	if step == 0 {
		type noTime struct {
			Tool     string  `json:"tool"`
			Category string  `json:"category"`
			Code     int64   `json:"code"`
			Calls    uint64  `json:"calls"`
			Failures uint64  `json:"failures"`
			Rate     float64 `json:"rate"`
		}
		out := make([]noTime, len(rows))
		for i, r := range rows {
			out[i] = noTime{r.Tool, r.Category, r.Code, r.Calls, r.Failures, r.Rate}
		}
		return respond(c, f, out)
	}
	return respond(c, f, rows)
}
