package pipeline

import (
	"strings"
	"testing"

	"github.com/mcplens/mcplens/traffic"
)

// quickSeeds are schemas that use every keyword quickSchema reads, and its
// edges: exclusive and inclusive bounds, integer and float literals, type
// lists, nested objects and arrays, additionalProperties as a schema.
var quickSeeds = []string{
	searchDocsV1, searchDocsV2, searchIssues, createInvoice, updateTicket,
	`{"type":"object","properties":{"n":{"type":["integer","null"],"minimum":-3,"exclusiveMaximum":10},"x":{"type":"number","exclusiveMinimum":0.1,"maximum":1e3}},"additionalProperties":{"type":"string","maxLength":2}}`,
	`{"type":"array","items":{"enum":["a","é",1,null]},"minItems":1,"maxItems":3}`,
	`{"type":"object","required":["a","b"],"properties":{"a":true,"b":{}}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"big":{"maximum":9007199254740993},"p":{"pattern":"^x+$","minLength":2}}}`,
	getForecast,
	`{"properties":{"when":{"type":"string","format":"date-time"},"n":{"allOf":[{"type":"integer"},{"minimum":2}],"anyOf":[{"maximum":5},{"$ref":"#"},{"minimum":100}]}}}`,
}

// TestQuickSchemaForms: the shapes the common SDKs send have a quick form;
// what the quick form cannot read exactly has none.
func TestQuickSchemaForms(t *testing.T) {
	for _, tt := range []struct {
		name   string
		schema string
		quick  bool
	}{
		{"Pydantic without optionals", searchDocsV2, true},
		{"nested object, enum, bounded array", searchIssues, true},
		{"array of objects", createInvoice, true},
		{"zod, draft-07 declared", updateTicket, true},
		{"Pydantic's optional: anyOf", getForecast, true},
		{"format under 2020-12: an annotation", `{"type":"string","format":"email"}`, true},
		{"format under draft-07: asserted", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"string","format":"email"}`, false},
		{"allOf with a branch without a quick form", `{"allOf":[{"type":"string"},{"$ref":"#"}]}`, false},
		{"go-sdk: $defs and $ref", refund, false},
		{"draft-04: boolean exclusiveMaximum", `{"$schema":"http://json-schema.org/draft-04/schema#","maximum":3,"exclusiveMaximum":true}`, false},
		{"const", `{"const":"x"}`, false},
		{"draft-07 tuple items", `{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}`, false},
		{"a pattern RE2 cannot compile", `{"pattern":"(?<=a)b"}`, false},
		{"the schema false", `{"properties":{"a":false}}`, false},
		{"a vendor keyword", `{"type":"object","x-order":1}`, false},
	} {
		cs, err := compileSchema(tt.schema, "mcplens:///test/input.json")
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := cs.quick != nil; got != tt.quick {
			t.Errorf("%s: quick form %v, want %v", tt.name, got, tt.quick)
		}
	}
}

// TestQuickAcceptsAgreesWithTheValidator: every value the quick form
// accepts, the validator passes, over the hand-made cases and the edges of
// the bounds; and values the validator passes are accepted where the quick
// form can decide them.
func TestQuickAcceptsAgreesWithTheValidator(t *testing.T) {
	for _, tt := range []struct {
		schema, value string
		accept        bool // what accepts must say
	}{
		{searchDocsV2, `{"department":"hr","q":"x","limit":50}`, true},
		{searchDocsV2, `{"q":"x","department":"hr","limit":1}`, true},
		{searchDocsV2, `{"department":"finace","q":"x"}`, false},
		{searchDocsV2, `{"department":"hr","q":""}`, false},
		{searchDocsV2, `{"department":"hr","q":"x","limit":51}`, false},
		{searchDocsV2, `{"department":"hr","q":"x","limit":1.0}`, false}, // an integer, left to the validator
		{searchDocsV2, `{"department":"hr"}`, false},
		{searchDocsV2, `{"department":"hr","q":"x","extra":1}`, false},
		{searchDocsV2, `{"department":"hr","q":"x"} x`, false},
		{searchDocsV2, `{"department":"h\u0072","q":"x"}`, true},
		{searchDocsV2, `{"department":"hr","q":"x","q":""}`, false}, // a repeated key: the last is kept
		{searchIssues, `{"repo":"a/b","filters":{"state":"open","labels":["x","y"]}}`, true},
		{searchIssues, `{"repo":"a/b","filters":{"labels":["1","2","3","4","5","6"]}}`, false},
		{createInvoice, `{"customer_id":"C","lines":[{"sku":"s","qty":2}]}`, true},
		{createInvoice, `{"customer_id":"C","lines":[]}`, false},
		{quickSeeds[5], `{"n":-3,"x":0.2,"zz":"ab"}`, true},
		{quickSeeds[5], `{"n":10}`, false},
		{quickSeeds[5], `{"x":0.1}`, false},
		{quickSeeds[5], `{"x":0.1000000000000000001}`, false}, // equal as float64: left to the validator
		{quickSeeds[5], `{"n":null,"zz":"abc"}`, false},
		{quickSeeds[6], `["é",null]`, false},
		{quickSeeds[6], `["é","a"]`, true},
		{quickSeeds[7], `{"b":1,"a":2}`, true},
		{quickSeeds[7], `{"a":2}`, false},
		{quickSeeds[8], `{"big":9007199254740993,"p":"xx"}`, true},
		{quickSeeds[8], `{"big":9007199254740994}`, false},
		{quickSeeds[8], `{"p":"xy"}`, false},
		{getForecast, `{"city":"x","days":3}`, true},
		{getForecast, `{"city":"x","days":null}`, true},
		{getForecast, `{"days":3,"city":"x"}`, true},
		{getForecast, `{"city":"x","days":"3"}`, false},
		{getForecast, `{"city":"x","days":15}`, false},
		{getForecast, `{"days":3}`, false},
		{quickSeeds[10], `{"when":"not a date","n":4}`, true}, // format does not assert under 2020-12
		{quickSeeds[10], `{"n":1}`, false},
		{quickSeeds[10], `{"n":6}`, false}, // neither 5 or less nor 100 or more; the $ref branch is never tried
		{quickSeeds[10], `{"n":100}`, true},
		{quickSeeds[10], `{"n":4.0}`, false},
	} {
		cs, err := compileSchema(tt.schema, "mcplens:///test/input.json")
		if err != nil || cs.quick == nil {
			t.Fatalf("%s: %v, quick %v", tt.schema, err, cs != nil && cs.quick != nil)
		}
		got := cs.quick.accepts([]byte(tt.value))
		if got != tt.accept {
			t.Errorf("accepts(%s) against %s = %v, want %v", tt.value, tt.schema, got, tt.accept)
		}
		checkQuick(t, cs, []byte(tt.value))
	}
}

// TestQuickAcceptsTheGeneratedTraffic: on the demo's calls and tool lists
// the quick form agrees with the validator on every call and decides most
// of the calls that pass.
func TestQuickAcceptsTheGeneratedTraffic(t *testing.T) {
	cfg := traffic.Config{Seed: 5, Sessions: 300}
	schemas := map[string]*compiledSchema{}
	err := traffic.ToolsList(cfg, func(line []byte) error {
		defs, err := DecodeToolsList(line, nil)
		for _, d := range defs {
			if d.InputSchema != "" {
				if schemas[d.Server+"/"+d.Tool], err = compileSchema(d.InputSchema, "mcplens:///test/input.json"); err != nil {
					return err
				}
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var passed, accepted int
	err = traffic.Generate(cfg, func(line []byte) error {
		c, in, err := DecodeCapture(line, &DecodeOptions{Now: testNow})
		cs := schemas[c.Server+"/"+c.Tool]
		if err != nil || cs == nil || in.Arguments == nil {
			return nil
		}
		if fs, err := cs.validate(in.Arguments); err == nil && len(fs) == 0 {
			passed++
			if cs.quick != nil && cs.quick.accepts(in.Arguments) {
				accepted++
			}
		}
		checkQuick(t, cs, in.Arguments)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if passed < 1000 || accepted < passed*9/10 {
		t.Errorf("the quick form accepted %d of %d passing calls; want most", accepted, passed)
	}
}

// checkQuick fails t when cs's quick form accepts value and the validator
// does not pass it.
func checkQuick(t *testing.T, cs *compiledSchema, value []byte) {
	t.Helper()
	if cs.quick == nil || !cs.quick.accepts(value) {
		return
	}
	v, err := decodeJSONValue(value)
	if err != nil {
		t.Fatalf("accepted %s, which does not parse: %v", value, err)
	}
	if err := cs.sch.Validate(v); err != nil {
		t.Fatalf("accepted %s, which the validator refuses: %v", value, err)
	}
}

// FuzzQuickAccepts holds the quick form to the validator on random schemas
// and values: what it accepts, the validator must pass.
func FuzzQuickAccepts(f *testing.F) {
	for _, s := range quickSeeds {
		f.Add(s, `{"department":"hr","q":"x","limit":3,"n":2,"x":0.5,"a":1,"b":[1]}`)
		f.Add(s, `["a"]`)
	}
	f.Add(`{"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807}`, `-9223372036854775808`)
	f.Add(`{"type":"string","minLength":1,"maxLength":1}`, `"\ud83d\ude00"`)
	f.Add(`{"type":"string","maxLength":1}`, "\"\xff\"")
	f.Fuzz(func(t *testing.T, schema, value string) {
		canon, err := canonicalJSON([]byte(schema), 64)
		if err != nil {
			return
		}
		cs, err := compileSchema(string(canon), "mcplens:///fuzz/input.json")
		if err != nil || cs.quick == nil {
			return
		}
		if strings.Count(value, "[")+strings.Count(value, "{") > 200 {
			return
		}
		checkQuick(t, cs, []byte(value))
	})
}
