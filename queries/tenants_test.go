package queries_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcplens/mcplens/queries"
)

// TestEveryQueryTakesTheTenantAllowList: each SQL file restricts tenants
// with @tenants wherever it filters by @tenant, and each that reads calls or
// calls_5m does both, so that the API can scope a token to its tenants
// (api/auth.go refuses to run a query without @tenants for such a token).
func TestEveryQueryTakesTheTenantAllowList(t *testing.T) {
	files, err := filepath.Glob("*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no SQL files: %v", err)
	}
	reads := regexp.MustCompile(`(?i)\bFROM\s+calls(_5m)?\b`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		single := strings.Count(s, "(@tenant = '' OR tenant = @tenant)")
		allow := strings.Count(s, "(@all_tenants = 1 OR has(@tenants, tenant))")
		if allow != single || single == 0 && reads.MatchString(s) {
			t.Errorf("%s: %d tenant filters, %d tenant allow-lists; every tenant filter needs its allow-list, and every read of calls both", f, single, allow)
		}
		// The one query a restricted caller runs unscoped reads nothing but
		// the chain folds' hours and ids.
		if queries.ReadsNoTenantData(s) != (f == "chain_bound.sql") {
			t.Errorf("%s: ReadsNoTenantData %v", f, queries.ReadsNoTenantData(s))
		}
		if f == "chain_bound.sql" {
			code := regexp.MustCompile(`(?m)^\s*--.*$`).ReplaceAllString(s, "")
			if tables := regexp.MustCompile(`\bFROM\s+(\w+)`).FindAllStringSubmatch(code, -1); len(tables) != 1 || tables[0][1] != "chain_current_folds" {
				t.Errorf("%s reads %v; a query run unscoped for a restricted caller may read chain_current_folds only", f, tables)
			}
		}
	}
}
