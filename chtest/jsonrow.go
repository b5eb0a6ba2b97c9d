package chtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"time"
	"unicode/utf8"
)

// rowFields caches, per struct type, its fields by `ch` tag.
var rowFields sync.Map // reflect.Type → map[string]int

func fieldsOf(t reflect.Type) map[string]int {
	if f, ok := rowFields.Load(t); ok {
		return f.(map[string]int)
	}
	fields := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		if tag := t.Field(i).Tag.Get("ch"); tag != "" && tag != "-" {
			fields[tag] = i
		}
	}
	rowFields.Store(t, fields)
	return fields
}

var timeType = reflect.TypeOf(time.Time{})

// scanJSONEachRow decodes JSONEachRow output into *[]T by `ch` tags, as
// assign converts a value decoded by encoding/json, without decoding each
// row into a map of interfaces first: strings, numbers, booleans and
// date-times are read straight from the bytes into their fields, and only
// arrays and tuples go through encoding/json: 123 ns a cell against 586
// for decoding each row into a map first (BenchmarkScanJSONEachRow), whose
// cost the chDB timings of large results carried (BENCHMARKS.md,
// eighteenth round). Every row encoding/json and assign accept decodes to
// the same field values (FuzzScanJSONEachRow), but for a row that names a
// column twice, which ClickHouse never writes: there each value is set in
// turn, and one the field cannot take fails the row.
func scanJSONEachRow(out []byte, dest any) error {
	dv := reflect.ValueOf(dest)
	if dv.Kind() != reflect.Pointer || dv.Elem().Kind() != reflect.Slice {
		return fmt.Errorf("select: dest must be a pointer to a slice, got %T", dest)
	}
	slice := dv.Elem()
	elem := slice.Type().Elem()
	if elem.Kind() != reflect.Struct {
		return fmt.Errorf("select: slice element must be a struct, got %s", elem)
	}
	fields := fieldsOf(elem)
	d := rowDecoder{buf: out}
	// The rows replace what dest held, as clickhouse-go's Select does: a
	// slice used again for a second query holds that query's rows only.
	rows := slice.Slice(0, 0)
	for {
		d.space()
		if d.i >= len(d.buf) {
			break
		}
		rows = reflect.Append(rows, reflect.Zero(elem))
		if bytes.HasPrefix(d.buf[d.i:], []byte("null")) {
			d.i += len("null") // a null row: a zero struct, as encoding/json decodes it
			continue
		}
		if err := d.object(rows.Index(rows.Len()-1), fields, elem); err != nil {
			return fmt.Errorf("select: %w", err)
		}
	}
	slice.Set(rows)
	return nil
}

// rowDecoder reads JSON values from buf at i.
type rowDecoder struct {
	buf []byte
	i   int
}

var errSyntax = errors.New("decode row: invalid JSON")

func (d *rowDecoder) space() {
	for d.i < len(d.buf) {
		switch d.buf[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// expect consumes c after optional space.
func (d *rowDecoder) expect(c byte) error {
	d.space()
	if d.i >= len(d.buf) || d.buf[d.i] != c {
		return errSyntax
	}
	d.i++
	return nil
}

// object decodes one JSON object into the struct v.
func (d *rowDecoder) object(v reflect.Value, fields map[string]int, t reflect.Type) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	d.space()
	if d.i < len(d.buf) && d.buf[d.i] == '}' {
		d.i++
		return nil
	}
	for {
		d.space()
		key, err := d.stringBytes()
		if err != nil {
			return err
		}
		i, ok := fields[string(key)]
		if !ok {
			return fmt.Errorf("column %q has no field with tag ch:%q in %s", key, key, t)
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		if err := d.value(v.Field(i)); err != nil {
			return fmt.Errorf("column %s: %w", key, err)
		}
		d.space()
		if d.i >= len(d.buf) {
			return errSyntax
		}
		c := d.buf[d.i]
		d.i++
		if c == '}' {
			return nil
		}
		if c != ',' {
			return errSyntax
		}
	}
}

// stringBytes reads a JSON string at i and returns its text, unescaped
// and with invalid UTF-8 replaced as encoding/json does; the bytes alias
// buf when the string needs neither.
func (d *rowDecoder) stringBytes() ([]byte, error) {
	if d.i >= len(d.buf) || d.buf[d.i] != '"' {
		return nil, errSyntax
	}
	start := d.i
	plain := true
	for j := d.i + 1; j < len(d.buf); j++ {
		switch c := d.buf[j]; {
		case c == '"':
			d.i = j + 1
			if plain && utf8.Valid(d.buf[start+1:j]) {
				return d.buf[start+1 : j], nil
			}
			var s string
			if err := json.Unmarshal(d.buf[start:j+1], &s); err != nil {
				return nil, err
			}
			return []byte(s), nil
		case c == '\\':
			plain = false
			j++ // the escaped byte
		case c < 0x20:
			return nil, errSyntax
		}
	}
	return nil, errSyntax
}

// literal reads a number, true, false or null at i.
func (d *rowDecoder) literal() []byte {
	start := d.i
	for d.i < len(d.buf) {
		switch d.buf[d.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return d.buf[start:d.i]
		}
		d.i++
	}
	return d.buf[start:d.i]
}

// value decodes the JSON value at i into f, as assign does with the value
// encoding/json decodes (numbers as json.Number).
func (d *rowDecoder) value(f reflect.Value) error {
	d.space()
	if d.i >= len(d.buf) {
		return errSyntax
	}
	c := d.buf[d.i]
	kind := f.Kind()
	scalar := f.Type() == timeType || kind == reflect.String || kind == reflect.Bool ||
		kind >= reflect.Int && kind <= reflect.Uint64 || kind == reflect.Float32 || kind == reflect.Float64
	if !scalar || c == '[' || c == '{' {
		// Arrays and tuples: encoding/json reads the value and says where
		// it ended.
		dec := json.NewDecoder(bytes.NewReader(d.buf[d.i:]))
		dec.UseNumber()
		var val any
		if err := dec.Decode(&val); err != nil {
			return err
		}
		d.i += int(dec.InputOffset())
		return assign(f, val)
	}
	var text []byte
	quoted := c == '"'
	if quoted {
		s, err := d.stringBytes()
		if err != nil {
			return err
		}
		text = s
	} else {
		text = d.literal()
		switch string(text) {
		case "null":
			return assign(f, nil)
		case "true", "false":
			return assign(f, string(text) == "true")
		}
		if !validNumber(text) {
			return errSyntax
		}
	}
	switch {
	case f.Type() == timeType, kind == reflect.String:
		if !quoted {
			return assign(f, json.Number(text))
		}
		return assign(f, string(text))
	case kind >= reflect.Int && kind <= reflect.Int64:
		if n, ok := parseInt(text); ok {
			f.SetInt(n)
			return nil
		}
	case kind >= reflect.Uint && kind <= reflect.Uint64:
		if n, ok := parseUint(text); ok {
			f.SetUint(n)
			return nil
		}
	}
	if quoted {
		return assign(f, string(text))
	}
	return assign(f, json.Number(text))
}

// validNumber reports whether b is a JSON number.
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return false
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i == len(b)
}

// parseUint parses plain decimal digits that fit in a uint64; ok is false
// for anything else, which assign then parses or refuses.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

// parseInt parses an optional minus and plain decimal digits that fit in
// an int64.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	n, ok := parseUint(b)
	if !ok || n > math.MaxInt64 {
		return 0, false
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}
