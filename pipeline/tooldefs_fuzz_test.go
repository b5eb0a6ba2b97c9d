package pipeline

import (
	"testing"

	"github.com/cespare/xxhash/v2"
)

// FuzzDecodeToolsList feeds capture lines through the tools/list decoder.
// No input may panic; every definition it returns is named, hashed from its
// canonical text, and canonical.
func FuzzDecodeToolsList(f *testing.F) {
	for _, s := range []string{searchDocsV1, searchDocsV2, searchIssues, createInvoice, getForecast, updateTicket, refund} {
		f.Add([]byte(toolsListLine("2026-11-29T09:05:00Z", searchDocsTool(s))))
	}
	f.Add([]byte(`{"time":"2026-11-29T09:00:00Z","request":{"method":"tools/list"},"response":{"result":{"tools":[{"name":"a","annotations":{"readOnlyHint":"yes"},"_meta":null}]}}}`))
	f.Add([]byte(`{"request":{"method":"tools/list"},"response":{"result":{"tools":{}}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		defs, err := DecodeToolsList(line, testOptions())
		if err != nil {
			return
		}
		for _, d := range defs {
			canon, cerr := canonicalJSON([]byte(d.Definition), 64)
			switch {
			case d.Tool == "" || d.Tenant == "" || d.Server == "":
				t.Fatalf("unnamed definition %+v", d)
			case d.Hash != xxhash.Sum64String(d.Definition):
				t.Fatalf("hash of %s is not its xxHash64", d.Definition)
			case cerr != nil || string(canon) != d.Definition:
				t.Fatalf("definition not canonical: %s (%v)", d.Definition, cerr)
			}
		}
	})
}

// FuzzValidate compiles arbitrary schemas and validates arbitrary values
// against them: the validator sees untrusted input on both sides, so no
// pair may panic, and every finding names a path and a known reason.
func FuzzValidate(f *testing.F) {
	f.Add(searchDocsV2, `{"department":"finace","q":"x"}`)
	f.Add(createInvoice, `{"customer_id":"C","lines":[{"qty":0}]}`)
	f.Add(getForecast, `{"city":"x","days":"3"}`)
	f.Add(refund, `{"refund":{"amount":-1}}`)
	f.Add(`{"oneOf":[{"type":"string"},{"maxLength":3}],"not":{"const":1}}`, `"ab"`)
	f.Add(`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`, `1`)
	known := map[string]bool{ReasonMissingRequired: true, ReasonWrongType: true, ReasonNotInEnum: true, ReasonOutOfRange: true,
		ReasonBadLength: true, ReasonPatternMismatch: true, ReasonBadFormat: true, ReasonAdditionalProperty: true,
		ReasonNoMatch: true, ReasonOther: true}
	f.Fuzz(func(t *testing.T, schema, value string) {
		canon, err := canonicalJSON([]byte(schema), 64)
		if err != nil {
			return
		}
		cs, err := compileSchema(string(canon), "mcplens:///fuzz/input.json")
		if err != nil {
			return
		}
		fs, err := cs.validate([]byte(value))
		if err != nil {
			return
		}
		if len(fs) > maxViolationsPerSide {
			t.Fatalf("%d findings", len(fs))
		}
		for _, x := range fs {
			if x.path == "" || !known[x.reason] {
				t.Fatalf("finding %+v", x)
			}
		}
	})
}
