package pipeline

import (
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/mcplens/mcplens/spelling"
)

// Sides of a Violation.
const (
	SideArguments = "arguments"
	SideResult    = "result"
)

// Reasons of a Violation, from the JSON Schema keyword that failed.
const (
	ReasonMissingRequired    = "missing_required"    // required, dependentRequired
	ReasonWrongType          = "wrong_type"          // type
	ReasonNotInEnum          = "not_in_enum"         // enum, const
	ReasonOutOfRange         = "out_of_range"        // minimum, maximum, exclusive*, multipleOf
	ReasonBadLength          = "bad_length"          // min/maxLength, min/maxItems, min/maxProperties
	ReasonPatternMismatch    = "pattern_mismatch"    // pattern
	ReasonBadFormat          = "bad_format"          // format, contentEncoding, contentMediaType
	ReasonAdditionalProperty = "additional_property" // additionalProperties false (or a schema it fails)
	ReasonNoMatch            = "no_match"            // anyOf, oneOf, not, false schemas, contains
	ReasonMissingStructured  = "missing_structured_content"
	ReasonOther              = "other"
)

// Violation is one failed path of one validated call: a row of the
// call_violations table. (Until schema migration 024, a call whose
// arguments passed had one row with Side arguments and empty Path and
// Reason; its calls row's args_validated now says it.) Detail says what the schema allows and
// Suggestion is the closest allowed value or property name; neither ever
// holds a value the call sent.
type Violation struct {
	Time           time.Time
	TimeMs         int64
	Tenant         string
	Server         string
	Tool           string
	CallID         uint64
	DefinitionHash uint64
	Side           string
	Path           string // "department", "filters.status", "items[].id"; "$" is the whole value
	Reason         string
	Detail         string
	Suggestion     string
	Category       string // the call's classification
	IsFailure      uint8
	IngestedMs     int64
}

// Values returns the row in the column order of insert_call_violations.sql.
func (v *Violation) Values() []any {
	return []any{v.Time, v.TimeMs, v.Tenant, v.Server, v.Tool, v.CallID, v.DefinitionHash, v.Side,
		v.Path, v.Reason, v.Detail, v.Suggestion, v.Category, v.IsFailure, v.IngestedMs}
}

// maxViolationsPerSide caps the rows one call side produces; a value with
// thousands of unknown keys is reported by its first ones.
const maxViolationsPerSide = 32

// finding is one violation before it is tied to a call.
type finding struct {
	path, reason, detail, suggestion string
}

// compiledSchema is one compiled JSON Schema with the document it came from
// (to look up declared properties for suggestions).
type compiledSchema struct {
	sch   *jsonschema.Schema
	doc   any
	quick *quickSchema // nil: every value goes to sch
}

// compileSchema compiles text (canonical JSON) as a JSON Schema: 2020-12
// unless $schema names draft-07 or another supported draft; an unknown
// $schema falls back to 2020-12. $ref to anything outside the document is
// refused (no file or network access), and a pattern Go's RE2 cannot
// compile (lookaround, backreferences) matches everything.
func compileSchema(text, loc string) (*compiledSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	sch, err := compileDoc(doc, loc)
	if m, ok := doc.(map[string]any); ok && err != nil && m["$schema"] != nil {
		// A $schema we cannot resolve: read the schema as 2020-12, as MCP
		// servers that declare nothing are read.
		delete(m, "$schema")
		sch, err = compileDoc(doc, loc)
	}
	if err != nil {
		return nil, err
	}
	return &compiledSchema{sch: sch, doc: doc, quick: compileQuick(doc)}, nil
}

func compileDoc(doc any, loc string) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	c.UseRegexpEngine(lenientRegexp)
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("add schema: %w", err)
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	return sch, nil
}

// refuseLoader keeps the compiler from reading files or the network for a
// $ref: schemas come from untrusted input.
type refuseLoader struct{}

func (refuseLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("external $ref %s is not followed", u)
}

// lenientRegexp compiles with Go's regexp; a pattern it cannot compile
// matches everything, so that one ECMA-only pattern does not disable the
// rest of the schema.
func lenientRegexp(s string) (jsonschema.Regexp, error) {
	re, err := regexp.Compile(s)
	if err != nil {
		return anyString(s), nil
	}
	return re, nil
}

type anyString string

func (anyString) MatchString(string) bool { return true }
func (a anyString) String() string        { return string(a) }

// validate checks the JSON value raw against cs and returns the findings,
// at most maxViolationsPerSide, in a stable order. A value that the
// schema's quick form accepts is valid without building it as Go values
// for the validator (quickvalid.go); any other goes to the validator.
func (cs *compiledSchema) validate(raw []byte) ([]finding, error) {
	if cs.quick != nil && cs.quick.accepts(raw) {
		return nil, nil
	}
	v, err := decodeJSONValue(raw)
	if err != nil {
		return nil, fmt.Errorf("parse value: %w", err)
	}
	err = cs.sch.Validate(v)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	var out []finding
	cs.collect(ve, v, &out)
	slices.SortStableFunc(out, func(a, b finding) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return strings.Compare(a.reason, b.reason)
	})
	out = slices.CompactFunc(out, func(a, b finding) bool { return a == b })
	if len(out) > maxViolationsPerSide {
		out = out[:maxViolationsPerSide]
	}
	return out, nil
}

// collect walks the error tree to its leaves. anyOf and oneOf are reported
// once at their location, except when every alternative failed on type (or
// on enum) alone, as Pydantic's Optional fields do: then they read as one
// wrong_type (not_in_enum) with the union of what is allowed.
func (cs *compiledSchema) collect(e *jsonschema.ValidationError, root any, out *[]finding) {
	path := renderPath(root, e.InstanceLocation)
	add := func(f finding) { *out = append(*out, f) }
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		for _, c := range e.Causes {
			cs.collect(c, root, out)
		}
		if len(e.Causes) == 0 {
			add(finding{path, ReasonOther, "fails the schema", ""})
		}
	case *kind.Required:
		for _, m := range k.Missing {
			add(finding{joinPath(path, m), ReasonMissingRequired, "required property", ""})
		}
	case *kind.DependentRequired:
		for _, m := range k.Missing {
			add(finding{joinPath(path, m), ReasonMissingRequired, fmt.Sprintf("required when %q is present", k.Prop), ""})
		}
	case *kind.Dependency:
		for _, m := range k.Missing {
			add(finding{joinPath(path, m), ReasonMissingRequired, fmt.Sprintf("required when %q is present", k.Prop), ""})
		}
	case *kind.AdditionalProperties:
		declared := cs.declaredProperties(e.SchemaURL)
		for _, p := range k.Properties {
			add(finding{joinPath(path, p), ReasonAdditionalProperty, "not a property the schema declares",
				spelling.Closest(p, declared)})
		}
	case *kind.Type:
		add(finding{path, ReasonWrongType, fmt.Sprintf("want %s, got %s", strings.Join(k.Want, " or "), k.Got), ""})
	case *kind.Enum:
		add(enumFinding(path, k.Got, k.Want))
	case *kind.Const:
		add(enumFinding(path, k.Got, []any{k.Want}))
	case *kind.Minimum:
		add(finding{path, ReasonOutOfRange, "minimum " + ratString(k.Want), ""})
	case *kind.Maximum:
		add(finding{path, ReasonOutOfRange, "maximum " + ratString(k.Want), ""})
	case *kind.ExclusiveMinimum:
		add(finding{path, ReasonOutOfRange, "exclusive minimum " + ratString(k.Want), ""})
	case *kind.ExclusiveMaximum:
		add(finding{path, ReasonOutOfRange, "exclusive maximum " + ratString(k.Want), ""})
	case *kind.MultipleOf:
		add(finding{path, ReasonOutOfRange, "multiple of " + ratString(k.Want), ""})
	case *kind.MinLength:
		add(finding{path, ReasonBadLength, fmt.Sprintf("minLength %d", k.Want), ""})
	case *kind.MaxLength:
		add(finding{path, ReasonBadLength, fmt.Sprintf("maxLength %d", k.Want), ""})
	case *kind.MinItems:
		add(finding{path, ReasonBadLength, fmt.Sprintf("minItems %d", k.Want), ""})
	case *kind.MaxItems:
		add(finding{path, ReasonBadLength, fmt.Sprintf("maxItems %d", k.Want), ""})
	case *kind.AdditionalItems:
		add(finding{path, ReasonBadLength, "more items than the schema allows", ""})
	case *kind.MinProperties:
		add(finding{path, ReasonBadLength, fmt.Sprintf("minProperties %d", k.Want), ""})
	case *kind.MaxProperties:
		add(finding{path, ReasonBadLength, fmt.Sprintf("maxProperties %d", k.Want), ""})
	case *kind.Pattern:
		add(finding{path, ReasonPatternMismatch, "pattern " + k.Want, ""})
	case *kind.Format:
		add(finding{path, ReasonBadFormat, "format " + k.Want, ""})
	case *kind.ContentEncoding:
		add(finding{path, ReasonBadFormat, "contentEncoding " + k.Want, ""})
	case *kind.ContentMediaType:
		add(finding{path, ReasonBadFormat, "contentMediaType " + k.Want, ""})
	case *kind.AnyOf:
		add(cs.alternatives(path, "anyOf", e.Causes))
	case *kind.OneOf:
		if len(k.Subschemas) > 1 {
			add(finding{path, ReasonNoMatch, "matches more than one oneOf alternative", ""})
		} else {
			add(cs.alternatives(path, "oneOf", e.Causes))
		}
	case *kind.Not:
		add(finding{path, ReasonNoMatch, "matches a schema under not", ""})
	case *kind.FalseSchema:
		add(finding{path, ReasonNoMatch, "the schema allows no value here", ""})
	case *kind.Contains, *kind.MinContains, *kind.MaxContains:
		add(finding{path, ReasonNoMatch, "items do not match contains", ""})
	case *kind.UniqueItems:
		add(finding{path, ReasonOther, "items must be unique", ""})
	case *kind.PropertyNames:
		add(finding{joinPath(path, k.Property), ReasonOther, "property name not allowed by propertyNames", ""})
	default:
		add(finding{path, ReasonOther, "fails " + keyword(e.ErrorKind), ""})
	}
}

// alternatives reduces a failed anyOf/oneOf.
func (cs *compiledSchema) alternatives(path, kw string, causes []*jsonschema.ValidationError) finding {
	var types []string
	var allowed []any
	var got any
	onlyType, onlyEnum := len(causes) > 0, len(causes) > 0
	for _, c := range causes {
		leaf := unwrap(c)
		switch k := leaf.ErrorKind.(type) {
		case *kind.Type:
			onlyEnum = false
			for _, w := range k.Want {
				if !slices.Contains(types, w) {
					types = append(types, w)
				}
			}
		case *kind.Enum:
			onlyType = false
			allowed, got = append(allowed, k.Want...), k.Got
		case *kind.Const:
			onlyType = false
			allowed, got = append(allowed, k.Want), k.Got
		default:
			onlyType, onlyEnum = false, false
		}
	}
	switch {
	case onlyType:
		var gotType string
		if k, ok := unwrap(causes[0]).ErrorKind.(*kind.Type); ok {
			gotType = k.Got
		}
		return finding{path, ReasonWrongType, fmt.Sprintf("want %s, got %s", strings.Join(types, " or "), gotType), ""}
	case onlyEnum:
		return enumFinding(path, got, allowed)
	}
	return finding{path, ReasonNoMatch, "matches no " + kw + " alternative", ""}
}

// unwrap descends through single-cause wrappers to the failing keyword.
func unwrap(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(e.Causes) == 1 {
		switch e.ErrorKind.(type) {
		case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
			e = e.Causes[0]
			continue
		}
		break
	}
	return e
}

// enumFinding lists the allowed values (the first ten) and, for a string
// that is close to one allowed string, suggests it.
func enumFinding(path string, got any, want []any) finding {
	var shown, candidates []string
	for _, w := range want {
		s := displayValue(w)
		if len(shown) < 10 {
			shown = append(shown, s)
		}
		if ws, ok := w.(string); ok {
			candidates = append(candidates, ws)
		}
	}
	detail := "allowed: " + strings.Join(shown, ", ")
	if len(want) > len(shown) {
		detail += fmt.Sprintf(" (and %d more)", len(want)-len(shown))
	}
	if len(want) == 1 {
		detail = "must be " + shown[0]
	}
	var suggestion string
	if g, ok := got.(string); ok {
		suggestion = spelling.Closest(g, candidates)
	}
	return finding{path, ReasonNotInEnum, detail, suggestion}
}

// displayValue renders an allowed value: strings bare, others as JSON-ish
// text, each at most 64 bytes.
func displayValue(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case nil:
		s = "null"
	default:
		s = fmt.Sprint(x)
	}
	if len(s) > 64 {
		s = s[:utf8Cut([]byte(s), 61)] + "..."
	}
	return s
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func keyword(k jsonschema.ErrorKind) string {
	if p := k.KeywordPath(); len(p) > 0 {
		return p[0]
	}
	return "the schema"
}

// declaredProperties returns the property names declared by the schema at
// schemaURL (its "properties" keys), when it lies in this document.
func (cs *compiledSchema) declaredProperties(schemaURL string) []string {
	_, frag, _ := strings.Cut(schemaURL, "#")
	node := cs.doc
	if frag != "" {
		for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
			tok, err := url.PathUnescape(tok)
			if err != nil {
				return nil
			}
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			switch n := node.(type) {
			case map[string]any:
				node = n[tok]
			case []any:
				i, err := strconv.Atoi(tok)
				if err != nil || i < 0 || i >= len(n) {
					return nil
				}
				node = n[i]
			default:
				return nil
			}
		}
	}
	m, _ := node.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// renderPath writes an instance location as dotted keys with [] for any
// array element ("items[].id"), so that paths aggregate across elements;
// keys that would read ambiguously are quoted (filters["a.b"]). The root is
// "$".
func renderPath(root any, loc []string) string {
	var b strings.Builder
	node := root
	for _, tok := range loc {
		switch n := node.(type) {
		case []any:
			b.WriteString("[]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(n) {
				node = n[i]
			} else {
				node = nil
			}
			continue
		case map[string]any:
			node = n[tok]
		default:
			node = nil
		}
		writeKey(&b, tok)
	}
	if b.Len() == 0 {
		return "$"
	}
	return b.String()
}

// joinPath appends one property name to a rendered path.
func joinPath(path, key string) string {
	var b strings.Builder
	if path != "$" {
		b.WriteString(path)
	}
	writeKey(&b, key)
	return b.String()
}

func writeKey(b *strings.Builder, key string) {
	plain := key != "" && key != "$" && !strings.ContainsAny(key, `.[]"`)
	switch {
	case !plain:
		b.WriteString("[")
		b.WriteString(strconv.Quote(key))
		b.WriteString("]")
	case b.Len() == 0:
		b.WriteString(key)
	default:
		b.WriteString(".")
		b.WriteString(key)
	}
}
