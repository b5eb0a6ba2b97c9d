package chtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// scanGeneric is the decoder scanJSONEachRow replaced, kept as its
// reference: each row into a map of interfaces by encoding/json, then
// every value through assign.
func scanGeneric(out []byte, dest any) error {
	slice := reflect.ValueOf(dest).Elem()
	elem := slice.Type().Elem()
	fields := fieldsOf(elem)
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	for dec.More() {
		var row map[string]any
		if err := dec.Decode(&row); err != nil {
			return err
		}
		v := reflect.New(elem).Elem()
		for col, val := range row {
			i, ok := fields[col]
			if !ok {
				return fmt.Errorf("no field %q", col)
			}
			if err := assign(v.Field(i), val); err != nil {
				return err
			}
		}
		slice.Set(reflect.Append(slice, v))
	}
	// More stops at a stray ] or }: the stream must end there.
	if rest := bytes.TrimSpace(out[dec.InputOffset():]); len(rest) > 0 {
		return fmt.Errorf("trailing %q", rest)
	}
	return nil
}

// scanRow has a field of every kind the project's rows use.
type scanRow struct {
	S   string    `ch:"s"`
	I   int64     `ch:"i"`
	I8  int8      `ch:"i8"`
	U   uint64    `ch:"u"`
	U8  uint8     `ch:"u8"`
	F   float64   `ch:"f"`
	B   bool      `ch:"b"`
	T   time.Time `ch:"t"`
	A   []string  `ch:"a"`
	N   []uint64  `ch:"n"`
	Tup struct {
		X int64  `ch:"x"`
		Y string `ch:"y"`
	} `ch:"tup"`
}

// sameScan decodes text with both decoders. When the reference accepts it
// the new one must too, with the same rows (compared as printed, so that
// NaN equals NaN); the new one may refuse more.
func sameScan(t *testing.T, text string) (ok bool) {
	t.Helper()
	var want, got []scanRow
	werr := scanGeneric([]byte(text), &want)
	gerr := scanJSONEachRow([]byte(text), &got)
	if werr != nil || namesAColumnTwice(text) {
		// A row naming a column twice: the reference keeps the last
		// value, scanJSONEachRow sets each in turn and may refuse an
		// earlier one. ClickHouse names each column once.
		return false
	}
	if gerr != nil {
		t.Fatalf("%q: the reference decodes it, scanJSONEachRow fails: %v", text, gerr)
	}
	if w, g := fmt.Sprintf("%#v", want), fmt.Sprintf("%#v", got); w != g {
		t.Fatalf("%q:\n got %s\nwant %s", text, g, w)
	}
	return true
}

// namesAColumnTwice reports whether some top-level object of the JSON
// stream text has a key twice.
func namesAColumnTwice(text string) bool {
	dec := json.NewDecoder(strings.NewReader(text))
	depth, key := 0, false
	var keys map[string]bool
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				depth++
				if depth == 1 && t == '{' {
					keys, key = map[string]bool{}, true
				}
			default:
				depth--
				key = depth == 1 // a nested value ended: a key comes next
			}
		default:
			if depth != 1 {
				continue
			}
			if k, ok := t.(string); ok && key {
				if keys[k] {
					return true
				}
				keys[k] = true
				key = false
			} else {
				key = true
			}
		}
	}
}

// TestScanJSONEachRowMatchesEncodingJSON: ClickHouse's JSONEachRow shapes
// (64-bit integers quoted, null NaNs, escapes, arrays, tuples) decode as
// the reference does; malformed rows fail.
func TestScanJSONEachRowMatchesEncodingJSON(t *testing.T) {
	for _, text := range []string{
		``,
		"\n",
		`{}`,
		`{"s":"acme","i":"-9223372036854775808","i8":-7,"u":"18446744073709551615","u8":255,"f":0.25,"b":true,"t":"2026-11-29 12:00:01","a":["x","y"],"n":["1","2"],"tup":[3,"z"]}`,
		`{"s":"tab\there \"quoted\" \u00e9 \ud83d\ude00 /\/","i":12,"u":"0012","f":null,"b":0,"t":"2026-11-29"}` + "\n" + `{"s":"","f":"nan","u8":true,"i":false}`,
		`{"f":"inf"} {"f":"-inf"}{"f":-1.5e-3,"i":"+5","b":"1"}`,
		`{"tup":{"x":"4","y":"w"},"a":[],"n":[]}`,
		"{\"s\":\"\xff\xfe bad utf-8\"}",
		` { "s" : "spaced" , "i" : 1 } `,
		`null`,
		`{"s":"dup","s":"last"}`,
		`{"u":"99999999999999999999"}`,
		`{"i":"9223372036854775808"}`,
		`{"i":1.5}`,
		`{"s":1}`,
		`{"i":"x"}`,
		`{"zz":1}`,
		`{"s":"unterminated}`,
		`{"i":01}`,
		`{"i":1,}`,
		`{"a":[1,2}`,
		`[1]`,
	} {
		sameScan(t, text)
	}
	// The rows the reference refuses, refused here too.
	for _, text := range []string{`{"s":1}`, `{"i":"x"}`, `{"zz":1}`, `{"s":"unterminated}`, `{"i":01}`, `{"i":1,}`, `{"a":[1,2}`, `[1]`, `{"u":"-1"}`} {
		var rows []scanRow
		if err := scanJSONEachRow([]byte(text), &rows); err == nil {
			t.Errorf("%q: decoded %v, want an error", text, rows)
		}
	}
	var rows []scanRow
	if err := scanJSONEachRow([]byte(`{"zz":1}`), &rows); err == nil || !strings.Contains(err.Error(), `column "zz" has no field with tag ch:"zz"`) {
		t.Errorf("unknown column: %v, want it named", err)
	}
}

// FuzzScanJSONEachRow: whatever the reference decodes, scanJSONEachRow
// decodes to the same rows.
func FuzzScanJSONEachRow(f *testing.F) {
	for _, s := range []string{
		`{"s":"acme","i":"-9","u":"18446744073709551615","f":0.25,"b":true,"t":"2026-11-29 12:00:01","a":["x"],"n":["1"],"tup":[3,"z"]}`,
		`{"f":null,"s":"\u00e9\"","i8":-7}` + "\n" + `{"f":"nan"}`,
		`null {} {"tup":{"x":"4","y":"w"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		sameScan(t, text)
	})
}

// BenchmarkScanJSONEachRow decodes 10,000 rows of the spikes' cells (a
// tool name, a bucket and two quoted 64-bit counts) with the reference
// decoder and with scanJSONEachRow, per cell.
func BenchmarkScanJSONEachRow(b *testing.B) {
	var buf bytes.Buffer
	for i := 0; i < 10_000; i++ {
		fmt.Fprintf(&buf, `{"tool_name":"tool_%04d","bucket_s":"%d","calls_n":"%d","invalid_n":"%d"}`+"\n", i%1820, 1795824000+3600*(i%24), 20+i%40, i%7)
	}
	type cell struct {
		Tool    string `ch:"tool_name"`
		Bucket  int64  `ch:"bucket_s"`
		Calls   int64  `ch:"calls_n"`
		Invalid int64  `ch:"invalid_n"`
	}
	for _, d := range []struct {
		name string
		scan func([]byte, any) error
	}{{"encoding-json", scanGeneric}, {"scanJSONEachRow", scanJSONEachRow}} {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var rows []cell
				if err := d.scan(buf.Bytes(), &rows); err != nil || len(rows) != 10_000 {
					b.Fatal(err, len(rows))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/40_000, "ns/cell")
		})
	}
}

// TestScanJSONEachRowReplacesDest: a slice scanned into again holds the
// second result's rows only, as clickhouse-go's Select leaves it; a test
// that reads a count into the same slice twice must see the second count.
func TestScanJSONEachRowReplacesDest(t *testing.T) {
	var rows []struct {
		N uint64 `ch:"n"`
	}
	if err := scanJSONEachRow([]byte(`{"n":"7"}`+"\n"+`{"n":"8"}`), &rows); err != nil {
		t.Fatal(err)
	}
	if err := scanJSONEachRow([]byte(`{"n":"0"}`), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].N != 0 {
		t.Fatalf("rows after a second scan: %+v, want the second result's one row, 0", rows)
	}
	if err := scanJSONEachRow(nil, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 0 {
		t.Fatalf("rows after scanning no rows: %+v, want none", rows)
	}
}
