package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/labstack/echo/v4"

	"github.com/mcplens/mcplens/auth"
	"github.com/mcplens/mcplens/queries"
)

// Access control. With Config.Tokens set, every request but /healthz,
// /readyz and the OpenAPI document needs a bearer token: role api for the
// analytics, role metrics for /metrics (whose gauges cover every tenant).
// An api token that does not cover every tenant
//
//   - gets 403 for a tenant parameter outside its tenants, and
//   - has its tenants put in the request context, from where scopedDB binds
//     them as @tenants into every query, whatever the handler did.
//
// So a handler cannot leak another tenant's rows by forgetting a filter:
// scopedDB refuses to run, for a restricted token, SQL that does not take
// @tenants at all.

type tenantsKey struct{}

func withTenants(ctx context.Context, tenants []string) context.Context {
	return context.WithValue(ctx, tenantsKey{}, tenants)
}

// tenantsFrom returns the tenants the request is restricted to, if any.
func tenantsFrom(ctx context.Context) ([]string, bool) {
	t, ok := ctx.Value(tenantsKey{}).([]string)
	return t, ok
}

// public are the routes served without a token.
var public = map[string]bool{"/healthz": true, "/readyz": true, "/api/v1/openapi.json": true}

func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.Tokens == nil || public[c.Path()] {
			return next(c)
		}
		t, err := s.cfg.Tokens.Authenticate(c.Request().Header.Get("Authorization"))
		if err != nil {
			s.m.denied.WithLabelValues("unauthenticated").Inc()
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="mcplens api"`)
			return echo.NewHTTPError(http.StatusUnauthorized, err.Error())
		}
		want := auth.RoleAPI
		if c.Path() == "/metrics" {
			want = auth.RoleMetrics
		}
		if t.Role != want {
			s.m.denied.WithLabelValues("wrong_role").Inc()
			return echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf("token %q has role %s; this needs role %s", t.Name, t.Role, want))
		}
		if t.Unrestricted() {
			return next(c)
		}
		for _, tn := range c.QueryParams()["tenant"] {
			if !t.AllowsTenant(tn) {
				s.m.denied.WithLabelValues("tenant").Inc()
				return echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf("token %q may not read tenant %q", t.Name, tn))
			}
		}
		c.SetRequest(c.Request().WithContext(withTenants(c.Request().Context(), t.Tenants)))
		return next(c)
	}
}

// errUnscoped is a query that cannot be restricted to the caller's tenants.
var errUnscoped = errors.New("query does not take @tenants; refused for a tenant-restricted token")

// scopedDB binds the request's tenants (tenantsFrom) into every query as
// @tenants / @all_tenants, overriding what the handler passed.
type scopedDB struct{ db queries.DB }

// Select implements queries.DB.
func (d scopedDB) Select(ctx context.Context, dest any, query string, args ...any) error {
	tenants, ok := tenantsFrom(ctx)
	if !ok {
		return d.db.Select(ctx, dest, query, args...)
	}
	if queries.ReadsNoTenantData(query) {
		return d.db.Select(ctx, dest, query, args...)
	}
	if !strings.Contains(query, "@tenants") || !strings.Contains(query, "@all_tenants") {
		return errUnscoped
	}
	scoped := make([]any, 0, len(args)+2)
	for _, a := range args {
		if nv, ok := a.(driver.NamedValue); ok && (nv.Name == "tenants" || nv.Name == "all_tenants") {
			continue
		}
		scoped = append(scoped, a)
	}
	scoped = append(scoped, driver.NamedValue{Name: "all_tenants", Value: 0}, driver.NamedValue{Name: "tenants", Value: tenants})
	return d.db.Select(ctx, dest, query, scoped...)
}
