package pipeline

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Input schemas in the shapes real MCP servers send: the Python SDK and
// FastMCP (Pydantic: titles, anyOf with null for optional fields), the
// TypeScript SDK (zod-to-json-schema: draft-07 declared,
// additionalProperties false), go-sdk (jsonschema-go: $defs and $ref).
const (
	// kb.search_docs before the department enum was added.
	searchDocsV1 = `{"type":"object","properties":{"department":{"type":"string","description":"Department whose documents to search"},"q":{"type":"string","minLength":1},"limit":{"type":"integer","minimum":1,"maximum":50}},"required":["q"],"additionalProperties":false}`
	// kb.search_docs with the enum of the seed article.
	searchDocsV2 = `{"type":"object","properties":{"department":{"type":"string","enum":["finance","engineering","hr","sales","legal"]},"q":{"type":"string","minLength":1},"limit":{"type":"integer","minimum":1,"maximum":50}},"required":["department","q"],"additionalProperties":false}`
	// github.search_issues: a nested object with an enum and a bounded array.
	searchIssues = `{"type":"object","properties":{"repo":{"type":"string","pattern":"^[\\w.-]+/[\\w.-]+$"},"filters":{"type":"object","properties":{"state":{"type":"string","enum":["open","closed","all"]},"labels":{"type":"array","items":{"type":"string"},"maxItems":5}},"additionalProperties":false}},"required":["repo"]}`
	// payments.create_invoice: an array of objects.
	createInvoice = `{"type":"object","properties":{"customer_id":{"type":"string"},"lines":{"type":"array","minItems":1,"items":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}},"required":["sku","qty"]}}},"required":["customer_id","lines"]}`
	// weather.get_forecast from FastMCP: Pydantic's optional integer.
	getForecast = `{"properties":{"city":{"title":"City","type":"string"},"days":{"anyOf":[{"type":"integer","minimum":1,"maximum":14},{"type":"null"}],"default":null,"title":"Days"}},"required":["city"],"title":"get_forecastArguments","type":"object"}`
	// crm.update_ticket from the TypeScript SDK: draft-07 declared.
	updateTicket = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"ticket_id":{"type":"string"},"status":{"type":"string","enum":["open","pending","resolved","closed"]},"note":{"type":"string"}},"required":["ticket_id","status"],"additionalProperties":false}`
	// payments.refund from go-sdk: $defs and $ref.
	refund = `{"type":"object","$defs":{"money":{"type":"object","properties":{"amount":{"type":"number","exclusiveMinimum":0},"currency":{"enum":["CNY","EUR","USD"]}},"required":["amount","currency"],"additionalProperties":false}},"properties":{"invoice_id":{"type":"string"},"refund":{"$ref":"#/$defs/money"}},"required":["invoice_id","refund"]}`
)

func TestValidateArguments(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		args   string
		want   []finding
	}{
		{"seed article: misspelled department is not in the enum, with the near value suggested",
			searchDocsV2, `{"department":"finace","q":"差旅报销上限"}`,
			[]finding{{"department", ReasonNotInEnum, "allowed: finance, engineering, hr, sales, legal", "finance"}}},
		{"the same call passes the definition without the enum", searchDocsV1, `{"department":"finace","q":"差旅报销上限"}`, nil},
		{"case and whitespace slips are suggested", searchDocsV2, `{"department":"Legal","q":"x"}`,
			[]finding{{"department", ReasonNotInEnum, "allowed: finance, engineering, hr, sales, legal", "legal"}}},
		{"a value far from every enum value gets no suggestion", searchDocsV2, `{"department":"it","q":"x"}`,
			[]finding{{"department", ReasonNotInEnum, "allowed: finance, engineering, hr, sales, legal", ""}}},
		{"missing required property", searchDocsV2, `{"department":"hr"}`,
			[]finding{{"q", ReasonMissingRequired, "required property", ""}}},
		{"absent arguments read as {}", searchDocsV1, `{}`,
			[]finding{{"q", ReasonMissingRequired, "required property", ""}}},
		{"wrong type", searchDocsV1, `{"q":"x","limit":"5"}`,
			[]finding{{"limit", ReasonWrongType, "want integer, got string", ""}}},
		{"out of range", searchDocsV1, `{"q":"x","limit":500}`,
			[]finding{{"limit", ReasonOutOfRange, "maximum 50", ""}}},
		{"string too short", searchDocsV1, `{"q":""}`,
			[]finding{{"q", ReasonBadLength, "minLength 1", ""}}},
		{"additional property with the declared name it misspells",
			searchDocsV2, `{"departmnt":"hr","q":"x"}`,
			[]finding{
				{"department", ReasonMissingRequired, "required property", ""},
				{"departmnt", ReasonAdditionalProperty, "not a property the schema declares", "department"},
			}},
		{"a key that needs quoting", searchDocsV1, `{"q":"x","a.b":1}`,
			[]finding{{`["a.b"]`, ReasonAdditionalProperty, "not a property the schema declares", ""}}},
		{"nested object: enum and array length", searchIssues,
			`{"repo":"acme/kb","filters":{"state":"opne","labels":["a","b","c","d","e","f"]}}`,
			[]finding{
				{"filters.labels", ReasonBadLength, "maxItems 5", ""},
				{"filters.state", ReasonNotInEnum, "allowed: open, closed, all", "open"},
			}},
		{"nested additionalProperties false", searchIssues, `{"repo":"acme/kb","filters":{"stat":"open"}}`,
			[]finding{{"filters.stat", ReasonAdditionalProperty, "not a property the schema declares", "state"}}},
		{"pattern", searchIssues, `{"repo":"acme kb"}`,
			[]finding{{"repo", ReasonPatternMismatch, `pattern ^[\w.-]+/[\w.-]+$`, ""}}},
		{"array elements aggregate under []", createInvoice,
			`{"customer_id":"C-1","lines":[{"sku":"A","qty":0},{"qty":2},{"sku":"B","qty":1}]}`,
			[]finding{
				{"lines[].qty", ReasonOutOfRange, "minimum 1", ""},
				{"lines[].sku", ReasonMissingRequired, "required property", ""},
			}},
		{"empty array", createInvoice, `{"customer_id":"C-1","lines":[]}`,
			[]finding{{"lines", ReasonBadLength, "minItems 1", ""}}},
		{"Pydantic optional: the anyOf reads as one wrong type", getForecast, `{"city":"Berlin","days":"3"}`,
			[]finding{{"days", ReasonWrongType, "want integer or null, got string", ""}}},
		{"Pydantic optional: null passes", getForecast, `{"city":"Berlin","days":null}`, nil},
		{"Pydantic optional: a range failure inside anyOf is no_match", getForecast, `{"city":"Berlin","days":30}`,
			[]finding{{"days", ReasonNoMatch, "matches no anyOf alternative", ""}}},
		{"draft-07 declared: enum with a case slip", updateTicket, `{"ticket_id":"T-1","status":"Resolved"}`,
			[]finding{{"status", ReasonNotInEnum, "allowed: open, pending, resolved, closed", "resolved"}}},
		{"draft-07 declared: an unknown status", updateTicket, `{"ticket_id":"T-1","status":"done"}`,
			[]finding{{"status", ReasonNotInEnum, "allowed: open, pending, resolved, closed", ""}}},
		{"$ref into $defs", refund, `{"invoice_id":"INV-1","refund":{"amount":0,"currency":"RMB"}}`,
			[]finding{
				{"refund.amount", ReasonOutOfRange, "exclusive minimum 0", ""},
				{"refund.currency", ReasonNotInEnum, "allowed: CNY, EUR, USD", ""},
			}},
		{"arguments that are not an object", searchDocsV1, `[1,2]`,
			[]finding{{"$", ReasonWrongType, "want object, got array", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := compileSchema(tt.schema, "mcplens:///test/input.json")
			if err != nil {
				t.Fatal(err)
			}
			got, err := cs.validate([]byte(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestCompileSchemaIsSafe(t *testing.T) {
	tests := []struct {
		name, schema, args string
		wantErr            bool
		wantFindings       int
	}{
		{"a file $ref is not read", `{"$ref":"file:///etc/passwd"}`, `{}`, true, 0},
		{"a network $ref is not fetched", `{"properties":{"a":{"$ref":"https://example.com/s.json"}}}`, `{}`, true, 0},
		{"an unknown $schema falls back to 2020-12", `{"$schema":"https://example.com/my-dialect","type":"object","required":["a"]}`, `{}`, false, 1},
		{"a lookahead pattern is not checked, the rest is", `{"type":"object","properties":{"p":{"type":"string","pattern":"^(?!x)"}},"required":["q"]}`, `{"p":"xyz"}`, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := compileSchema(tt.schema, "mcplens:///test/input.json")
			if (err != nil) != tt.wantErr {
				t.Fatalf("compile error %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			got, err := cs.validate([]byte(tt.args))
			if err != nil || len(got) != tt.wantFindings {
				t.Errorf("got %v %v, want %d findings", got, err, tt.wantFindings)
			}
		})
	}
}

func TestValidateCapsFindings(t *testing.T) {
	cs, err := compileSchema(`{"type":"object","additionalProperties":false}`, "mcplens:///test/input.json")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%03d":1`, i)
	}
	b.WriteString("}")
	got, err := cs.validate([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != maxViolationsPerSide || got[0].path != "k000" {
		t.Errorf("got %d findings starting %v, want %d starting at k000", len(got), got[0], maxViolationsPerSide)
	}
}
