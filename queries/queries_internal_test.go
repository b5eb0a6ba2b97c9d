package queries

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// hoursDB answers every query with the folded hours it holds.
type hoursDB []int64

func (d hoursDB) Select(_ context.Context, dest any, _ string, _ ...any) error {
	v := reflect.ValueOf(dest).Elem()
	for _, h := range d {
		row := reflect.New(v.Type().Elem()).Elem()
		row.Field(0).SetInt(h)
		v.Set(reflect.Append(v, row))
	}
	return nil
}

// TestFoldedUntil: the bound is the first hour from first that the list
// lacks, or end when none before it is missing.
func TestFoldedUntil(t *testing.T) {
	const first, end = 36000, 36000 + 5*3600
	for _, c := range []struct {
		name  string
		hours []int64
		want  int64
	}{
		{"none folded", nil, first},
		{"the first missing", []int64{first + 3600, first + 7200}, first},
		{"a gap", []int64{first, first + 3600, first + 3*3600}, first + 2*3600},
		{"every hour", []int64{first, first + 3600, first + 2*3600, first + 3*3600, first + 4*3600}, end},
	} {
		got, err := foldedUntil(context.Background(), hoursDB(c.hours), chainFoldHoursSQL, first, end)
		if err != nil || got != c.want {
			t.Errorf("%s: %d, %v; want %d", c.name, got, err, c.want)
		}
	}
}

// TestSplitPairKey reads the keys the chain analytics build with ByPair
// back into their names, whatever bytes the names hold, and rejects keys
// that are not of that form.
func TestSplitPairKey(t *testing.T) {
	for _, c := range []struct {
		key, tenant, server, tool string
		ok                        bool
	}{
		{"4:acme2:kbsearch", "acme", "kb", "search", true},
		{"0:0:", "", "", "", true},
		{"3:a:b4:1:2:3:x", "a:b", "1:2:", "3:x", true},
		{"4:é 12:kb", "é 1", "kb", "", true},
		{"search", "", "", "", false},
		{"9:acme2:kbsearch", "", "", "", false},
		{"4:acme", "", "", "", false},
		{"-1:acme2:kb", "", "", "", false},
		{"4:acmeX:kb", "", "", "", false},
	} {
		tenant, server, tool, err := splitPairKey(c.key)
		if (err == nil) != c.ok || c.ok && (tenant != c.tenant || server != c.server || tool != c.tool) {
			t.Errorf("splitPairKey(%q) = %q, %q, %q, %v; want %q, %q, %q, ok %v", c.key, tenant, server, tool, err, c.tenant, c.server, c.tool, c.ok)
		}
	}
}

// TestSplitRowKey: a row's tool column is the client's key with ByClient
// (even with ByPair set), the pair's with ByPair, the tool otherwise; a key
// that is not what the filter asked for is an error.
func TestSplitRowKey(t *testing.T) {
	for _, c := range []struct {
		f                            Filter
		key                          string
		tenant, server, client, tool string
		ok                           bool
	}{
		{Filter{}, "3:kbsearch", "", "", "", "3:kbsearch", true},
		{Filter{ByPair: true}, "4:acme2:kbsearch", "acme", "kb", "", "search", true},
		{Filter{ByClient: true}, "6:cursorsearch", "", "", "cursor", "search", true},
		{Filter{ByClient: true, ByPair: true}, "0:search", "", "", "", "search", true},
		{Filter{ByClient: true}, "search", "", "", "", "", false},
		{Filter{ByPair: true}, "4:acmesearch", "", "", "", "", false},
	} {
		tenant, server, client, tool, err := splitRowKey(c.f, c.key)
		if (err == nil) != c.ok || c.ok && (tenant != c.tenant || server != c.server || client != c.client || tool != c.tool) {
			t.Errorf("splitRowKey(%+v, %q) = %q, %q, %q, %q, %v; want %q, %q, %q, %q, ok %v", c.f, c.key, tenant, server, client, tool, err,
				c.tenant, c.server, c.client, c.tool, c.ok)
		}
	}
}

// TestStatementForms: of the four forms of recalls.sql and
// retry_outcomes.sql (clientForms), those without the client name no client
// column (retry_loops.sql always names it); the raw forms of them,
// retry_loops.sql and misclassifications.sql (withoutFold) read no fold and
// have one UNION ALL fewer; each keeps the raw branch.
func TestStatementForms(t *testing.T) {
	for _, c := range []struct {
		name         string
		sql          string
		client, fold bool
		unions       int
	}{
		{"recalls folded", recallsForms.statement(true, false), false, true, 1},
		{"recalls folded by client", recallsForms.statement(true, true), true, true, 1},
		{"recalls raw", recallsForms.statement(false, false), false, false, 0},
		{"recalls raw by client", recallsForms.statement(false, true), true, false, 0},
		{"retry outcomes folded", retryOutcomesForms.statement(true, false), false, true, 1},
		{"retry outcomes folded by client", retryOutcomesForms.statement(true, true), true, true, 1},
		{"retry outcomes raw", retryOutcomesForms.statement(false, false), false, false, 0},
		{"retry outcomes raw by client", retryOutcomesForms.statement(false, true), true, false, 0},
		{"retry loops folded", retryLoopsForms.statement(true), true, true, 1},
		{"retry loops raw", retryLoopsForms.statement(false), true, false, 0},
		{"misclassifications folded", misclassificationsForms.statement(true), false, true, 2},
		{"misclassifications raw", misclassificationsForms.statement(false), false, false, 1},
	} {
		var code []string // the statement without its comments
		for _, l := range strings.Split(c.sql, "\n") {
			if i := strings.Index(l, "--"); i >= 0 {
				l = l[:i]
			}
			code = append(code, l)
		}
		c.sql = strings.Join(code, "\n")
		client := strings.Contains(c.sql, "toString(client)") || strings.Contains(c.sql, "CAST(client AS String)")
		fold := strings.Contains(c.sql, "_folded") || strings.Contains(c.sql, "chain_current_folds")
		if client != c.client || fold != c.fold {
			t.Errorf("%s: reads the client %v (want %v), the fold %v (want %v)", c.name, client, c.client, fold, c.fold)
		}
		if !strings.Contains(c.sql, "FROM calls\n") || !strings.Contains(c.sql, "@raw_from_ms") || strings.Count(c.sql, "UNION ALL") != c.unions {
			t.Errorf("%s: not the raw branch with %d UNION ALL:\n%s", c.name, c.unions, c.sql)
		}
	}
}

// TestOverviewForms: the overview's raw form reads neither fold nor their
// bound, and keeps every raw branch; the folded form reads both folds and
// the bound.
func TestOverviewForms(t *testing.T) {
	for _, c := range []struct {
		name   string
		sql    string
		folded bool
		unions int
	}{
		{"folded", overviewForms.statement(true), true, 5},
		{"raw", overviewForms.statement(false), false, 3},
	} {
		code := sqlComment.ReplaceAllString(c.sql, "")
		for _, s := range []string{"calls_flags_folded", "sessions_folded", "@first_s", "@flags_bound_s"} {
			if strings.Contains(code, s) != c.folded {
				t.Errorf("%s form: reads %s %v, want %v", c.name, s, !c.folded, c.folded)
			}
		}
		if n := strings.Count(code, "UNION ALL"); n != c.unions || !strings.Contains(code, "uniqExact(key_)") || !strings.Contains(code, "SELECT session_key AS key_\n    FROM calls\n") || !strings.Contains(code, "calls_copies_folded") {
			t.Errorf("%s form: %d UNION ALL (want %d), or without the raw session keys or the copies' lookup:\n%s", c.name, n, c.unions, code)
		}
	}
}

// TestSkipsADay: the folded form only when the raw calls before first and
// from bound on leave a whole UTC day out.
func TestSkipsADay(t *testing.T) {
	day := int64(20_000 * 86400)
	for _, c := range []struct {
		name         string
		first, bound int64
		want         bool
	}{
		{"nothing folded", day + 9*3600, day + 9*3600, false},
		{"to the next midnight", day + 9*3600, day + 86400, false},
		{"to the end of the next day", day + 9*3600, day + 2*86400, true},
		{"an hour short of it", day + 9*3600, day + 2*86400 - 3600, false},
		{"a whole day from midnight", day, day + 86400, true},
		{"from midnight, an hour short", day, day + 86400 - 3600, false},
	} {
		if got := skipsADay(c.first, c.bound); got != c.want {
			t.Errorf("%s: skipsADay(%d, %d) = %v, want %v", c.name, c.first, c.bound, got, c.want)
		}
	}
}
