package chtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/chdb-io/chdb-go/chdb"
)

// ChDB runs SQL on ClickHouse 26.x in-process (chDB). It offers the Exec and
// Select methods of clickhouse-go's driver.Conn so that schema and queries run
// on it unchanged. chDB has one session per process, so every ChDB value
// shares it and switches to its own database before each statement.
type ChDB struct {
	session  *chdb.Session
	mu       *sync.Mutex
	database string
}

var chdbMu sync.Mutex

// OpenChDB opens (or reuses) the process-wide chDB session in dir.
func OpenChDB(dir string) (*ChDB, error) {
	s, err := chdb.NewSession(dir)
	if err != nil {
		return nil, fmt.Errorf("open chDB session: %w", err)
	}
	return &ChDB{session: s, mu: &chdbMu, database: "default"}, nil
}

// WithDatabase returns a handle that runs its statements in database db.
func (c *ChDB) WithDatabase(db string) *ChDB {
	return &ChDB{session: c.session, mu: c.mu, database: db}
}

// Version returns the engine's version string.
func (c *ChDB) Version() (string, error) {
	var v []struct {
		V string `ch:"v"`
	}
	if err := c.Select(context.Background(), &v, "SELECT version() AS v"); err != nil {
		return "", err
	}
	if len(v) != 1 {
		return "", fmt.Errorf("version: %d rows", len(v))
	}
	return v[0].V, nil
}

func (c *ChDB) run(query, format string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, err := c.session.Query("USE "+c.database, "TSV"); err != nil {
		return nil, fmt.Errorf("chdb use %s: %w", c.database, err)
	} else if r.Error() != nil {
		return nil, fmt.Errorf("chdb use %s: %w", c.database, r.Error())
	}
	r, err := c.session.Query(query, format)
	if err != nil {
		return nil, fmt.Errorf("chdb: %w", err)
	}
	defer r.Free()
	if err := r.Error(); err != nil {
		return nil, fmt.Errorf("chdb: %w", err)
	}
	return bytes.Clone(r.Buf()), nil
}

// Exec runs one statement with clickhouse-go style named arguments bound.
func (c *ChDB) Exec(_ context.Context, query string, args ...any) error {
	q, err := Bind(query, args...)
	if err != nil {
		return err
	}
	_, err = c.run(q, "TSV")
	return err
}

// Select runs a query and scans its rows into dest, a pointer to a slice of
// structs whose `ch` tags name the columns, as clickhouse-go's Select does.
func (c *ChDB) Select(_ context.Context, dest any, query string, args ...any) error {
	q, err := Bind(query, args...)
	if err != nil {
		return err
	}
	out, err := c.run(q, "JSONEachRow")
	if err != nil {
		return err
	}
	return scanJSONEachRow(out, dest)
}

// InsertJSONEachRow inserts rows given as column → value maps.
func (c *ChDB) InsertJSONEachRow(table string, columns []string, rows []map[string]any) error {
	if len(rows) == 0 {
		return nil
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "INSERT INTO %s (%s) FORMAT JSONEachRow\n", table, strings.Join(columns, ", "))
	enc := json.NewEncoder(&buf)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("encode row: %w", err)
		}
	}
	_, err := c.run(buf.String(), "TSV")
	return err
}

// Bind replaces @name placeholders with SQL literals, as clickhouse-go does on
// the client side for servers reached over the native protocol. It supports
// the value types the project binds: strings, integers, floats, bools,
// time.Time, slices of those (arrays) and clickhouse.GroupSet (a set for IN).
func Bind(query string, args ...any) (string, error) {
	if len(args) == 0 {
		return query, nil
	}
	vals := map[string]any{}
	for _, a := range args {
		nv, ok := a.(driver.NamedValue)
		if !ok {
			return "", fmt.Errorf("bind: only named arguments are supported, got %T", a)
		}
		vals[nv.Name] = nv.Value
	}
	var b strings.Builder
	inQuote := false
	for i := 0; i < len(query); i++ {
		ch := query[i]
		switch {
		case ch == '\'' && (i == 0 || query[i-1] != '\\'):
			inQuote = !inQuote
			b.WriteByte(ch)
		case ch == '-' && !inQuote && i+1 < len(query) && query[i+1] == '-':
			j := strings.IndexByte(query[i:], '\n')
			if j < 0 {
				j = len(query) - i
			}
			b.WriteString(query[i : i+j])
			i += j - 1
		case ch == '@' && !inQuote:
			j := i + 1
			for j < len(query) && (query[j] == '_' || query[j] >= 'a' && query[j] <= 'z' || query[j] >= 'A' && query[j] <= 'Z' || query[j] >= '0' && query[j] <= '9') {
				j++
			}
			name := query[i+1 : j]
			v, ok := vals[name]
			if !ok {
				return "", fmt.Errorf("bind: no value for @%s", name)
			}
			lit, err := literal(v)
			if err != nil {
				return "", fmt.Errorf("bind @%s: %w", name, err)
			}
			b.WriteString(lit)
			i = j - 1
		default:
			b.WriteByte(ch)
		}
	}
	return b.String(), nil
}

func literal(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return quote(x), nil
	case bool:
		if x {
			return "1", nil
		}
		return "0", nil
	case time.Time:
		return fmt.Sprintf("toDateTime('%s', 'UTC')", x.UTC().Format("2006-01-02 15:04:05")), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", fmt.Errorf("non-finite float %v", x)
		}
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32), nil
	case clickhouse.GroupSet: // a set for IN, as the driver writes it
		list, err := literalList(reflect.ValueOf(x.Value))
		return "(" + list + ")", err
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(rv.Uint(), 10), nil
	case reflect.Slice, reflect.Array:
		list, err := literalList(rv)
		return "[" + list + "]", err
	}
	return "", fmt.Errorf("unsupported type %T", v)
}

// literalList writes the elements of a slice or array as literals joined by
// ", ": the inside of an array literal or of a set for IN.
func literalList(rv reflect.Value) (string, error) {
	parts := make([]string, rv.Len())
	for i := range parts {
		p, err := literal(rv.Index(i).Interface())
		if err != nil {
			return "", err
		}
		parts[i] = p
	}
	return strings.Join(parts, ", "), nil
}

// quote writes s as a ClickHouse string literal. NUL is escaped too: chDB
// takes the query as a C string, which would end at a raw NUL.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\x00", `\0`)
	return "'" + r.Replace(s) + "'"
}

// assign sets f from val, a value encoding/json decoded with UseNumber:
// date-time strings, strings, numbers as json.Number or quoted (64-bit
// integers), booleans, null (NaN for floats), arrays and tuples.
func assign(f reflect.Value, val any) error {
	if val == nil {
		if f.Kind() == reflect.Float64 || f.Kind() == reflect.Float32 {
			f.SetFloat(math.NaN()) // ClickHouse writes nan and inf as null in JSON
		}
		return nil
	}
	if f.Type() == reflect.TypeOf(time.Time{}) {
		s, ok := val.(string)
		if !ok {
			return fmt.Errorf("want a date-time string, got %T", val)
		}
		layout := "2006-01-02 15:04:05"
		if len(s) == len("2006-01-02") {
			layout = "2006-01-02"
		}
		t, err := time.ParseInLocation(layout, s, time.UTC)
		if err != nil {
			return err
		}
		f.Set(reflect.ValueOf(t))
		return nil
	}
	switch f.Kind() {
	case reflect.String:
		s, ok := val.(string)
		if !ok {
			return fmt.Errorf("want string, got %T", val)
		}
		f.SetString(s)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(numText(val), 10, 64)
		if err != nil {
			return err
		}
		f.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if b, ok := val.(bool); ok {
			if b {
				f.SetUint(1)
			}
			return nil
		}
		n, err := strconv.ParseUint(numText(val), 10, 64)
		if err != nil {
			return err
		}
		f.SetUint(n)
	case reflect.Float32, reflect.Float64:
		s := numText(val)
		switch s {
		case "nan", "-nan":
			f.SetFloat(math.NaN())
			return nil
		case "inf", "+inf":
			f.SetFloat(math.Inf(1))
			return nil
		case "-inf":
			f.SetFloat(math.Inf(-1))
			return nil
		}
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		f.SetFloat(n)
	case reflect.Bool:
		b, ok := val.(bool)
		if !ok {
			n, err := strconv.ParseInt(numText(val), 10, 64)
			if err != nil {
				return err
			}
			b = n != 0
		}
		f.SetBool(b)
	case reflect.Slice:
		arr, ok := val.([]any)
		if !ok {
			return fmt.Errorf("want array, got %T", val)
		}
		s := reflect.MakeSlice(f.Type(), len(arr), len(arr))
		for i, x := range arr {
			if err := assign(s.Index(i), x); err != nil {
				return err
			}
		}
		f.Set(s)
	case reflect.Struct:
		// Tuples arrive as JSON arrays (unnamed) or objects (named); map by position.
		switch t := val.(type) {
		case []any:
			if len(t) != f.NumField() {
				return fmt.Errorf("tuple of %d elements into %s", len(t), f.Type())
			}
			for i, x := range t {
				if err := assign(f.Field(i), x); err != nil {
					return err
				}
			}
		case map[string]any:
			for i := 0; i < f.NumField(); i++ {
				if x, ok := t[f.Type().Field(i).Tag.Get("ch")]; ok {
					if err := assign(f.Field(i), x); err != nil {
						return err
					}
				}
			}
		default:
			return fmt.Errorf("want tuple, got %T", val)
		}
	default:
		return fmt.Errorf("unsupported field kind %s", f.Kind())
	}
	return nil
}

func numText(v any) string {
	switch x := v.(type) {
	case json.Number:
		return x.String()
	case string:
		return x
	case bool:
		if x {
			return "1"
		}
		return "0"
	}
	return fmt.Sprint(v)
}
