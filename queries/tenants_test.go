package queries_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
		// The queries a restricted caller runs unscoped read nothing but
		// the folds' hours and ids: the current chain folds, and the marks
		// (calls 0) of calls_flags_folded or sessions_folded with the
		// current hour folds.
		unscoped := map[string][]string{
			"chain_fold_hours.sql":    {"chain_current_folds"},
			"flags_fold_hours.sql":    {"calls_flags_folded", "calls_5m_current_folds"},
			"overview_fold_hours.sql": {"sessions_folded", "calls_5m_current_folds"},
		}
		want, ok := unscoped[f]
		if queries.ReadsNoTenantData(s) != ok {
			t.Errorf("%s: ReadsNoTenantData %v", f, queries.ReadsNoTenantData(s))
		}
		if ok {
			code := regexp.MustCompile(`(?m)^\s*--.*$`).ReplaceAllString(s, "")
			var tables []string
			for _, m := range regexp.MustCompile(`\bFROM\s+(\w+)`).FindAllStringSubmatch(code, -1) {
				tables = append(tables, m[1])
			}
			if !slices.Equal(tables, want) || len(tables) > 1 && !strings.Contains(code, "WHERE calls = 0") {
				t.Errorf("%s reads %v; a query run unscoped for a restricted caller may read %v only, marks only", f, tables, want)
			}
		}
	}
}
