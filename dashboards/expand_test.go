package dashboards_test

import (
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
)

// This file re-implements what happens to a ClickHouse target's rawSql
// between the dashboard JSON and ClickHouse, so that the tests can run
// exactly what Grafana would send:
//
//  1. the plugin's frontend expands $__conditionalAll (applyConditionalAll
//     in grafana/clickhouse-datasource src/data/CHDatasource.ts);
//  2. Grafana's template service substitutes $var, ${var} and ${var:format}
//     with the plugin's default format for unformatted multi-values;
//  3. the plugin's backend expands its macros (pkg/macros/macros.go,
//     v4.2.0 to v4.20.0; the reference note lists the exact text).
//
// Alert queries skip steps 1 and 2: Grafana's alerting evaluates them in the
// backend, where no template variable exists.

// selection is the current value of one template variable: All, or values.
type selection struct {
	all    bool
	values []string
}

func all() selection                { return selection{all: true} }
func values(vs ...string) selection { return selection{values: vs} }
func (s selection) current() string { return strings.Join(s.currentList(), ",") }
func (s selection) currentList() []string {
	if s.all {
		return []string{"$__all"}
	}
	return s.values
}

// applyConditionalAll is the frontend's $__conditionalAll: from the last
// occurrence backwards, the macro becomes its first argument, or 1=1 when
// the variable named by the second is All or empty. Arguments are split by
// counting parentheses only; with other than two arguments the query is
// returned unchanged, as the plugin does.
func applyConditionalAll(sql string, vars map[string]selection) string {
	const macro = "$__conditionalAll("
	varRe := regexp.MustCompile(`\$\{([\w\d]+)\}|\$([\w\d]+)`)
	for i := strings.LastIndex(sql, macro); i >= 0; i = strings.LastIndex(sql, macro) {
		args := macroArgs(sql[i+len(macro)-1:])
		if len(args) != 2 {
			return sql
		}
		phrase := args[0]
		if m := varRe.FindStringSubmatch(strings.TrimSpace(args[1])); m != nil {
			name := m[1] + m[2]
			if v := vars[name].current(); v == "" || v == "$__all" {
				phrase = "1=1"
			}
		}
		sql = strings.Replace(sql, macro+args[0]+","+args[1]+")", phrase, 1)
	}
	return sql
}

// macroArgs is the frontend's getMacroArgs: s starts at the "(".
func macroArgs(s string) []string {
	var args []string
	depth, last := 0, 1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 1 {
				args = append(args, s[last:i])
				last = i + 1
			}
			continue
		default:
			continue
		}
		if depth == 0 {
			return append(args, s[last:i])
		}
	}
	return nil
}

// templateRe is Grafana's variable syntax (public/app/features/variables/utils.ts).
var templateRe = regexp.MustCompile(`\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?\}`)

// interpolate is Grafana's templateSrv.replace with the ClickHouse plugin's
// format function. Names that are not variables ($__timeFilter, $__interval_s)
// stay as they are. options lists every value of each variable, for All.
func interpolate(t testing.TB, sql string, vars map[string]selection, options map[string][]string) string {
	t.Helper()
	return templateRe.ReplaceAllStringFunc(sql, func(m string) string {
		g := templateRe.FindStringSubmatch(m)
		name, format := g[1]+g[2]+g[4], g[3]+g[6]
		sel, ok := vars[name]
		if !ok {
			if !strings.HasPrefix(name, "__") {
				t.Errorf("variable $%s has no value in the test", name)
			}
			return m
		}
		vs := sel.values
		multi := len(vs) != 1
		if sel.all {
			vs, multi = options[name], true
		}
		switch format {
		case "":
			if multi {
				return "'" + strings.Join(vs, "','") + "'"
			}
			return vs[0]
		case "singlequote":
			q := make([]string, len(vs))
			for i, v := range vs {
				q[i] = "'" + strings.ReplaceAll(v, "'", `\'`) + "'"
			}
			return strings.Join(q, ",")
		case "sqlstring":
			q := make([]string, len(vs))
			for i, v := range vs {
				q[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
			}
			return strings.Join(q, ",")
		case "percentencode":
			if multi {
				break // the frontend encodes {v1,v2} as one text
			}
			return percentEncode(vs[0])
		case "raw", "csv":
			return strings.Join(vs, ",")
		}
		t.Errorf("variable format %s of $%s not modelled by the test", format, name)
		return m
	})
}

// percentEncode is the frontend's percentencode format
// (encodeURIComponentStrict): every byte of the UTF-8 text but the RFC 3986
// unreserved characters as %XX, upper-case hex.
func percentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// macroRange is the time range and interval the backend expands macros with.
type macroRange struct {
	from, to time.Time
	interval time.Duration
}

// expandMacros is the plugin backend (v4.20.0, macropro): $__name( ... )
// with arguments split at depth 1 and trimmed; comments and quoted strings
// are left alone; unknown macros stay. Only the macros whose text is the
// same from v4.2.0 to v4.20.0 are implemented; any other fails the test.
func expandMacros(t testing.TB, sql string, r macroRange) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(sql); {
		switch {
		case strings.HasPrefix(sql[i:], "--"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				j = len(sql) - i
			}
			b.WriteString(sql[i : i+j])
			i += j
		case strings.HasPrefix(sql[i:], "/*"):
			j := strings.Index(sql[i:], "*/")
			if j < 0 {
				j = len(sql) - i - 2
			}
			b.WriteString(sql[i : i+j+2])
			i += j + 2
		case sql[i] == '\'':
			j := i + 1
			for j < len(sql) && sql[j] != '\'' {
				if sql[j] == '\\' {
					j++
				}
				j++
			}
			b.WriteString(sql[i:min(j+1, len(sql))])
			i = j + 1
		case strings.HasPrefix(sql[i:], "$__"):
			j := i + 3
			for j < len(sql) && (sql[j] == '_' || sql[j] >= 'a' && sql[j] <= 'z' || sql[j] >= 'A' && sql[j] <= 'Z' || sql[j] >= '0' && sql[j] <= '9') {
				j++
			}
			name := sql[i+3 : j]
			var args []string
			end := j
			if j < len(sql) && sql[j] == '(' {
				raw := macroArgs(sql[j:])
				if raw == nil {
					t.Fatalf("macro $__%s: failed to parse macro arguments (missing close bracket?)", name)
				}
				n := len(strings.Join(raw, ",")) + 2
				end = j + n
				for _, a := range raw {
					args = append(args, strings.TrimSpace(expandMacros(t, a, r)))
				}
			}
			b.WriteString(macro(t, name, args, r, sql[i:end]))
			i = end
		default:
			b.WriteByte(sql[i])
			i++
		}
	}
	return b.String()
}

func macro(t testing.TB, name string, args []string, r macroRange, text string) string {
	t.Helper()
	f, to := r.from.Unix(), r.to.Unix()
	fd, td := r.from.Local().Format("2006-01-02"), r.to.Local().Format("2006-01-02")
	want := func(n int) {
		if len(args) != n {
			t.Fatalf("$__%s expected %d argument(s), received %d", name, n, len(args))
		}
	}
	switch name {
	case "timeFilter":
		want(1)
		return fmt.Sprintf("%s >= toDateTime(%d) AND %s <= toDateTime(%d)", args[0], f, args[0], to)
	case "timeFilter_ms":
		want(1)
		return fmt.Sprintf("%s >= fromUnixTimestamp64Milli(%d) AND %s <= fromUnixTimestamp64Milli(%d)", args[0], r.from.UnixMilli(), args[0], r.to.UnixMilli())
	case "dateFilter":
		want(1)
		return fmt.Sprintf("%s >= toDate('%s') AND %s <= toDate('%s')", args[0], fd, args[0], td)
	case "dateTimeFilter", "dt":
		want(2)
		return fmt.Sprintf("(%s >= toDate('%s') AND %s <= toDate('%s')) AND (%s >= toDateTime(%d) AND %s <= toDateTime(%d))", args[0], fd, args[0], td, args[1], f, args[1], to)
	case "fromTime":
		return fmt.Sprintf("toDateTime(%d)", f)
	case "toTime":
		return fmt.Sprintf("toDateTime(%d)", to)
	case "fromTime_ms":
		return fmt.Sprintf("fromUnixTimestamp64Milli(%d)", r.from.UnixMilli())
	case "toTime_ms":
		return fmt.Sprintf("fromUnixTimestamp64Milli(%d)", r.to.UnixMilli())
	case "timeInterval":
		want(1)
		return fmt.Sprintf("toStartOfInterval(toDateTime(%s), INTERVAL %d second)", args[0], intervalSeconds(r.interval))
	case "timeInterval_ms":
		want(1)
		return fmt.Sprintf("toStartOfInterval(toDateTime64(%s, 3), INTERVAL %d millisecond)", args[0], max(r.interval.Milliseconds(), 1))
	case "interval_s":
		return strconv.Itoa(intervalSeconds(r.interval))
	}
	t.Fatalf("macro %s is not one the dashboards may use (reference §5.2)", text)
	return ""
}

func intervalSeconds(d time.Duration) int { return int(max(d.Seconds(), 1)) }

// expandPanel runs the whole pipeline for a panel or variable query.
func expandPanel(t testing.TB, sql string, vars map[string]selection, options map[string][]string, r macroRange) string {
	t.Helper()
	return expandMacros(t, interpolate(t, applyConditionalAll(sql, vars), vars, options), r)
}

// TestMacroExpansionMatchesPlugin checks the re-implementation against the
// plugin's own test vectors (pkg/macros/macros_test.go) and the frontend's
// $__conditionalAll cases.
func TestMacroExpansionMatchesPlugin(t *testing.T) {
	r := macroRange{
		from:     time.Date(2014, 11, 12, 11, 45, 26, 371000000, time.UTC),
		to:       time.Date(2015, 11, 12, 11, 45, 26, 371000000, time.UTC),
		interval: 20 * time.Second,
	}
	for _, tc := range []struct{ in, want string }{
		{"$__timeFilter(col)", "col >= toDateTime(1415792726) AND col <= toDateTime(1447328726)"},
		{"$__timeFilter_ms(col)", "col >= fromUnixTimestamp64Milli(1415792726371) AND col <= fromUnixTimestamp64Milli(1447328726371)"},
		{"$__fromTime", "toDateTime(1415792726)"},
		{"$__toTime", "toDateTime(1447328726)"},
		{"$__fromTime_ms", "fromUnixTimestamp64Milli(1415792726371)"},
		{"$__timeInterval(col)", "toStartOfInterval(toDateTime(col), INTERVAL 20 second)"},
		{"$__timeInterval_ms(col)", "toStartOfInterval(toDateTime64(col, 3), INTERVAL 20000 millisecond)"},
		{"$__interval_s", "20"},
		{"$__timeFilter(coalesce(closed_at, $__toTime))", "coalesce(closed_at, toDateTime(1447328726)) >= toDateTime(1415792726) AND coalesce(closed_at, toDateTime(1447328726)) <= toDateTime(1447328726)"},
		{"SELECT 1 -- $__fromTime\n", "SELECT 1 -- $__fromTime\n"},
		{"SELECT '$__fromTime'", "SELECT '$__fromTime'"},
	} {
		if got := expandMacros(t, tc.in, r); got != tc.want {
			t.Errorf("expand %q\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
	if got, want := expandMacros(t, "$__dateFilter(d)", r), fmt.Sprintf("d >= toDate('%s') AND d <= toDate('%s')", r.from.Local().Format("2006-01-02"), r.to.Local().Format("2006-01-02")); got != want {
		t.Errorf("dateFilter: got %q, want %q", got, want)
	}

	vars := map[string]selection{"a": all(), "b": values("x", "y"), "c": values("it's"), "d": values("fin'ace\\, 未(*)~"), "f": values("foo()bar BAZ")}
	opts := map[string][]string{"a": {"p", "q"}}
	for _, tc := range []struct{ in, want string }{
		{"WHERE $__conditionalAll(a IN (${a:singlequote}), $a)", "WHERE 1=1"},
		{"WHERE $__conditionalAll(b IN (${b:singlequote}), $b)", "WHERE b IN ('x','y')"},
		{"WHERE $__conditionalAll( b IN ($b), ${b})", "WHERE  b IN ('x','y')"},
		{"WHERE c = ${c:singlequote}", `WHERE c = 'it\'s'`},
		{"WHERE c = ${c:sqlstring}", `WHERE c = 'it''s'`},
		{"WHERE a IN ($a)", "WHERE a IN ('p','q')"},
		// The scenes formatRegistry test's vector, and every byte but the
		// unreserved characters escaped.
		{"${f:percentencode}", "foo%28%29bar%20BAZ"},
		{"v = decodeURLComponent('${d:percentencode}')", "v = decodeURLComponent('fin%27ace%5C%2C%20%E6%9C%AA%28%2A%29~')"},
	} {
		if got := interpolate(t, applyConditionalAll(tc.in, vars), vars, opts); got != tc.want {
			t.Errorf("template %q\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
	// A depth-1 comma inside a string gives three arguments: the plugin
	// then returns the whole query unexpanded.
	if in := "WHERE $__conditionalAll(x = 'a,b', $b)"; applyConditionalAll(in, vars) != in {
		t.Errorf("conditionalAll with a comma in a string: got %q, want it unchanged", applyConditionalAll(in, vars))
	}
}

// resolveBounds is Grafana's refresh of a dashboard's bound variables
// (gVariable.bound) before its panels run: each one that sql uses is
// expanded over the same range with the same selections, run on e, and its
// one value set, as Grafana sets a variable with one option and no current
// value. bounds maps their names to their rawSql; vars is not changed.
func resolveBounds(t testing.TB, e *chtest.Engine, sql string, bounds map[string]string, vars map[string]selection, r macroRange) map[string]selection {
	t.Helper()
	out := maps.Clone(vars)
	for name, q := range bounds {
		if !regexp.MustCompile(`\$\{?` + name + `\b`).MatchString(sql) {
			continue
		}
		cols, rows := query(t, e, expandPanel(t, q, vars, nil, r))
		if len(cols) != 1 || !isString(cols[0].Type) || len(rows) != 1 {
			t.Fatalf("bound variable %s: columns %v and %d rows, want one string value", name, cols, len(rows))
		}
		out[name] = values(rows[0][0].(string))
	}
	return out
}
