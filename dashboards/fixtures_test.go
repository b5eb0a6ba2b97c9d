package dashboards_test

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/classify"
)

func TestMain(m *testing.M) { os.Exit(chtest.Main(m)) }

// now is the end of every range the tests expand macros with.
var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// fx is one fixture call. Zero values mean: tenant acme, server kb, session
// s1, category OK, arguments {}, retryability not declared, duration 20 ms.
type fx struct {
	at       time.Duration // before now
	tenant   string
	server   string
	session  string
	tool     string
	category classify.Category
	args     string // canonical arguments; keys and values are derived from it
	declared string // "", "yes" or "no"
	// misflagged: the isError flag contradicts the category (a failure sent
	// as a success, or a success flagged as an error).
	misflagged bool
	code       int64 // JSON-RPC error code
	message    string
	duration   int64
	retryAfter time.Duration // the server's retry-after hint
	// latest, when set, re-ingests the call later with this category (a
	// rules change): the queries must count it once, as this class.
	latest classify.Category
	// latestMisflagged: the re-ingest (latest) is misflagged; it is not
	// otherwise, whatever the first ingest was.
	latestMisflagged bool
}

var seqNo int

func (c fx) call() pipeline.Call {
	seqNo++
	ts := now.Add(-c.at)
	def := func(s, d string) string {
		if s == "" {
			return d
		}
		return s
	}
	tenant, server, session := def(c.tenant, "acme"), def(c.server, "kb"), def(c.session, "s1")
	cat := c.category
	if cat == "" {
		cat = classify.OK
	}
	args := def(c.args, "{}")
	keys, vals := argPairs(args)
	req := fmt.Sprint(seqNo)
	row := pipeline.Call{
		Time: ts, TimeMs: ts.UnixMilli(), DurationMs: 20, Tenant: tenant, Server: server, Tool: c.tool,
		SessionID: session, SessionKey: session, RequestID: req,
		CallID: fnv(tenant + "|" + server + "|" + session + "|" + req + "|" + ts.String()),
		Source: "capture", ArgsJSON: args, ArgsHash: fnv(args), ArgKeys: keys, ArgValues: vals,
		HasResponse: 1, ContentBlocks: 1, Message: c.message, DeclaredRetryable: classify.RetryUnknown,
		ClassSource: classify.SourceDefault, RPCCode: c.code, TaxonomyVersion: "test", IngestedMs: 1,
	}
	setCategory(&row, cat)
	if c.duration != 0 {
		row.DurationMs = c.duration
	}
	row.RetryAfterMs = c.retryAfter.Milliseconds()
	switch c.declared {
	case "yes":
		row.DeclaredRetryable = classify.RetryYes
	case "no":
		row.DeclaredRetryable = classify.RetryNo
	}
	if c.misflagged {
		row.Misflagged = 1
		row.IsError = 1 - row.IsError
	}
	if c.code != 0 {
		row.RPCError, row.IsError = 1, -1
	}
	return row
}

// setCategory gives row the category cat and what follows from it: the
// failure and isError flags (as sent by a server that flags correctly) and
// the expected retryability.
func setCategory(row *pipeline.Call, cat classify.Category) {
	row.Category, row.ExpectedRetryable = string(cat), cat.ExpectedRetryable()
	row.IsFailure, row.IsError = 0, 0
	if cat.Failure() {
		row.IsFailure, row.IsError = 1, 1
	}
}

// argPairs explodes a flat JSON object of string values, as ingest does.
func argPairs(args string) ([]string, []string) {
	keys, vals := []string{}, []string{}
	body := strings.Trim(args, "{}")
	if body == "" {
		return keys, vals
	}
	for _, kv := range strings.Split(body, ",") {
		k, v, _ := strings.Cut(kv, ":")
		keys = append(keys, strings.Trim(k, `"`))
		vals = append(vals, strings.Trim(v, `"`))
	}
	return keys, vals
}

func fnv(s string) uint64 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func calls(fs ...[]fx) []pipeline.Call {
	var out []pipeline.Call
	for _, group := range fs {
		for _, f := range group {
			row := f.call()
			out = append(out, row)
			if f.latest != "" {
				row.IngestedMs++
				setCategory(&row, f.latest)
				row.Misflagged = 0
				if f.latestMisflagged {
					row.Misflagged = 1
					row.IsError = 1 - row.IsError
				}
				out = append(out, row)
			}
		}
	}
	return out
}

// repeat returns n copies of f, the i-th made by edit (which may be nil).
func repeat(n int, f fx, edit func(i int, f *fx)) []fx {
	out := make([]fx, n)
	for i := range out {
		out[i] = f
		if edit != nil {
			edit(i, &out[i])
		}
	}
	return out
}

// chain is one retry chain in its own session: a failed call, then retries
// every 10 s; outcomes lists each call's category after the first.
func chain(tool, session string, at time.Duration, first classify.Category, declared string, sameArgs bool, outcomes ...classify.Category) []fx {
	out := []fx{{at: at, tool: tool, session: session, category: first, declared: declared, args: `{"q":"a"}`}}
	for i, c := range outcomes {
		args := `{"q":"a"}`
		if !sameArgs {
			args = fmt.Sprintf(`{"q":"b%d"}`, i)
		}
		out = append(out, fx{at: at - time.Duration(i+1)*10*time.Second, tool: tool, session: session, category: c, declared: declared, args: args})
	}
	return out
}

// column is one result column: its name and ClickHouse type.
type column struct {
	Name string `ch:"name"`
	Type string `ch:"type"`
}

// describe returns the result columns of a query (DESCRIBE TABLE (query)
// works on 18.16 and 26.x alike).
func describe(t testing.TB, e *chtest.Engine, sql string) []column {
	t.Helper()
	var rows []struct {
		Name        string `ch:"name"`
		Type        string `ch:"type"`
		DefaultType string `ch:"default_type"`
		DefaultExpr string `ch:"default_expression"`
		CommentExpr string `ch:"comment_expression"` // 18.16
		Comment     string `ch:"comment"`            // 19.x and later
		CodecExpr   string `ch:"codec_expression"`
		TTLExpr     string `ch:"ttl_expression"`
	}
	if err := e.DB.Select(context.Background(), &rows, "DESCRIBE TABLE ("+sql+")"); err != nil {
		t.Fatalf("%s: describe: %v\n%s", e.Name, err, sql)
	}
	cols := make([]column, len(rows))
	for i, r := range rows {
		cols[i] = column{Name: r.Name, Type: r.Type}
	}
	return cols
}

// query runs sql and returns its columns and rows, each value converted to
// a Go value by its column type (NULL as nil).
func query(t testing.TB, e *chtest.Engine, sql string) ([]column, [][]any) {
	t.Helper()
	cols := describe(t, e, sql)
	fields := make([]reflect.StructField, len(cols))
	for i, c := range cols {
		fields[i] = reflect.StructField{
			Name: fmt.Sprintf("F%d", i),
			Type: goType(t, c.Type, e.Conn != nil),
			Tag:  reflect.StructTag(fmt.Sprintf(`ch:"%s"`, c.Name)),
		}
	}
	rowType := reflect.StructOf(fields)
	dest := reflect.New(reflect.SliceOf(rowType))
	if err := e.DB.Select(context.Background(), dest.Interface(), sql); err != nil {
		t.Fatalf("%s: %v\n%s", e.Name, err, sql)
	}
	var rows [][]any
	for i := 0; i < dest.Elem().Len(); i++ {
		r := dest.Elem().Index(i)
		vals := make([]any, len(cols))
		for j := range cols {
			f := r.Field(j)
			if f.Kind() == reflect.Pointer {
				if f.IsNil() {
					continue
				}
				f = f.Elem()
			}
			vals[j] = f.Interface()
		}
		rows = append(rows, vals)
	}
	return cols, rows
}

// goType maps a ClickHouse result type to the Go type both drivers scan
// into. Nullable columns scan into pointers on the server driver; the chDB
// scanner turns NULL floats into NaN.
func goType(t testing.TB, chType string, server bool) reflect.Type {
	t.Helper()
	typ := chType
	nullable := false
	if strings.HasPrefix(typ, "Nullable(") {
		typ, nullable = strings.TrimSuffix(strings.TrimPrefix(typ, "Nullable("), ")"), true
	}
	if strings.HasPrefix(typ, "LowCardinality(") {
		typ = strings.TrimSuffix(strings.TrimPrefix(typ, "LowCardinality("), ")")
	}
	var rt reflect.Type
	switch {
	case typ == "String":
		rt = reflect.TypeOf("")
	case strings.HasPrefix(typ, "DateTime"):
		rt = reflect.TypeOf(time.Time{})
	case typ == "Float64" || typ == "Float32":
		rt = reflect.TypeOf(float64(0))
	case typ == "UInt8":
		rt = reflect.TypeOf(uint8(0))
	case typ == "UInt16":
		rt = reflect.TypeOf(uint16(0))
	case typ == "UInt32":
		rt = reflect.TypeOf(uint32(0))
	case typ == "UInt64":
		rt = reflect.TypeOf(uint64(0))
	case typ == "Int8":
		rt = reflect.TypeOf(int8(0))
	case typ == "Int16":
		rt = reflect.TypeOf(int16(0))
	case typ == "Int32":
		rt = reflect.TypeOf(int32(0))
	case typ == "Int64":
		rt = reflect.TypeOf(int64(0))
	default:
		t.Fatalf("result type %s not expected in a panel or alert", chType)
	}
	if nullable && server {
		return reflect.PointerTo(rt)
	}
	return rt
}

// isNumeric reports whether a ClickHouse type is a number Grafana plots.
func isNumeric(chType string) bool {
	typ := strings.TrimSuffix(strings.TrimPrefix(chType, "Nullable("), ")")
	return strings.HasPrefix(typ, "Float") || strings.HasPrefix(typ, "UInt") || strings.HasPrefix(typ, "Int")
}

func isString(chType string) bool {
	typ := strings.TrimSuffix(strings.TrimPrefix(chType, "LowCardinality("), ")")
	return typ == "String"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
