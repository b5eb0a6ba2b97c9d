package pipeline

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// jsonValueCases are values the scanner decodes (escapes and invalid
// UTF-8 included) and values it hands to encoding/json: bad syntax, deep
// nesting.
var jsonValueCases = []string{
	`{"department":"finace","limit":10,"q":"budget 2026"}`,
	`{"a":[1,-2.5,3e10,-0.0e-3,true,false,null,{}],"b":{"c":[]},"d":""}`,
	` { "a" : [ 1 , 2 ] , "a" : "last wins" } `,
	`"plain"`, `12`, `-0`, `null`, `[]`, `{}`,
	`{"s":"héllo, 世界"}`,
	`{"esc":"a\"b\\c\u00e9\n"}`,
	`{"sur":"\ud83d\ude00 \ud83d x \u0000"}`,
	"{\"bad\":\"\xff\xfe\"}",
	"{\"ctl\":\"a\tb\"}",
	`{"n":01}`, `{"n":1.}`, `{"n":.5}`, `{"n":-}`, `{"n":1e}`, `{"n":+1}`,
	`{"a":1,}`, `[1,]`, `{"a" 1}`, `{a:1}`, `[1 2]`, `tru`, `nul`, `{"a":1} x`, `{"a":1}{}`, ``, `   `,
	`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
}

func TestDecodeJSONValueIsUnmarshalJSON(t *testing.T) {
	for _, raw := range jsonValueCases {
		checkJSONValue(t, []byte(raw))
	}
}

// FuzzDecodeJSONValue holds decodeJSONValue equal to jsonschema.UnmarshalJSON
// on every input: the same value, or an error from both.
func FuzzDecodeJSONValue(f *testing.F) {
	for _, raw := range jsonValueCases {
		f.Add([]byte(raw))
	}
	f.Fuzz(checkJSONValue)
}

func checkJSONValue(t *testing.T, raw []byte) {
	got, gerr := decodeJSONValue(raw)
	want, werr := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if (gerr != nil) != (werr != nil) || !reflect.DeepEqual(got, want) {
		t.Errorf("%q: got %#v, %v; want %#v, %v", raw, got, gerr, want, werr)
	}
}
