package api

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// argsDB records the arguments of the last Select.
type argsDB struct{ args []any }

func (a *argsDB) Select(_ context.Context, _ any, _ string, args ...any) error {
	a.args = args
	return nil
}

func named(args []any) map[string]any {
	m := map[string]any{}
	for _, a := range args {
		if nv, ok := a.(driver.NamedValue); ok {
			m[nv.Name] = nv.Value
		}
	}
	return m
}

func TestScopedDBBindsTheTokensTenants(t *testing.T) {
	const q = "SELECT 1 WHERE (@all_tenants = 1 OR has(@tenants, tenant)) AND tool = @tool"
	in := []any{clickhouse.Named("tool", "x"), clickhouse.Named("all_tenants", 1), clickhouse.Named("tenants", []string{""})}
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		query string
		want  map[string]any // nil: refused
	}{
		{"open mode and unrestricted tokens pass through", context.Background(), q,
			map[string]any{"tool": "x", "all_tenants": 1, "tenants": []string{""}}},
		{"a restricted token overrides what the handler bound", withTenants(context.Background(), []string{"acme"}), q,
			map[string]any{"tool": "x", "all_tenants": 0, "tenants": []string{"acme"}}},
		{"SQL without @tenants is refused for a restricted token", withTenants(context.Background(), []string{"acme"}),
			"SELECT 1 WHERE tool = @tool", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &argsDB{}
			err := scopedDB{rec}.Select(tc.ctx, nil, tc.query, in...)
			if tc.want == nil {
				if !errors.Is(err, errUnscoped) {
					t.Fatalf("got %v, want errUnscoped", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := named(rec.args); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("bound %v, want %v", got, tc.want)
			}
		})
	}
}
