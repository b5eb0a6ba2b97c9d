package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcplens/mcplens/queries"
)

// param documents one query parameter of an endpoint.
type param struct {
	name, typ, format, description string
}

var commonParams = []param{
	{"from", "string", "", "start of the range, inclusive: RFC 3339 or unix seconds (default: to - 24h)"},
	{"to", "string", "", "end of the range, exclusive: RFC 3339 or unix seconds (default: now)"},
	{"tenant", "string", "", "only this tenant"},
	{"server", "string", "", "only this MCP server"},
	{"tool", "string", "", "only this tool"},
}

// endpoint documents one analytics endpoint; the OpenAPI document is built
// from this table and the row types, and a test checks it against the routes.
type endpoint struct {
	path, summary string
	params        []param
	row           any
}

var endpoints = []endpoint{
	{"/api/v1/failure-rates", "Failure rate per tool, category and JSON-RPC code", []param{
		{"step", "string", "duration", "bucket width (e.g. 1h); rows then carry time"},
	}, queries.FailureRate{}},
	{"/api/v1/empty-results", "Empty-result rate per tool and argument key=value (non-failed calls)", []param{
		{"arg_key", "string", "", "only this argument key"},
		{"min_calls", "integer", "", "leave out groups with fewer non-failed calls (default 1)"},
		{"limit", "integer", "", "at most this many rows, most empty results first (default 100)"},
	}, queries.EmptyResult{}},
	{"/api/v1/invalid-argument-spikes", "Buckets where a tool's INVALID_ARGUMENT share spiked over its baseline", []param{
		{"step", "string", "duration", "bucket width (default 1h)"},
		{"baseline", "string", "duration", "how far back the baseline share looks (default 168h)"},
		{"min_calls", "integer", "", "calls a bucket needs to be judged (default 20)"},
	}, queries.Spike{}},
	{"/api/v1/retry-outcomes", "How retry chains started in the range ended, per tool, category and retryability of the first call; with by=client, per client too: which clients' retries recover",
		[]param{retryWindowParam, clientByParam}, queries.RetryOutcome{}},
	{"/api/v1/recalls", "Failed calls re-sent with unchanged arguments within the retry window, per tool and category; with by=client, per client too: what each client does after a failure",
		[]param{retryWindowParam, clientByParam}, queries.Recall{}},
	{"/api/v1/retry-loops", "The longest retry chains started in the range, one row a chain: the session and client that kept calling a tool after failures, how many calls it took, whether the arguments ever changed and how it ended", []param{
		retryWindowParam,
		{"min_attempts", "integer", "", "fewest calls a chain needs, its first call included, 2 to 1000000 (default 5)"},
		{"limit", "integer", "", "at most this many chains, most calls first, then the latest start (default 50, at most 1000)"},
	}, queries.RetryLoop{}},
	{"/api/v1/misclassifications", "Tools and categories whose retry chains or isError flags contradict their classification", []param{
		retryWindowParam, byParam,
		{"min_chains", "integer", "", "smallest population of chains (misflagged: calls) a row needs (default 5)"},
	}, queries.Misclassification{}},
	{"/api/v1/overview", "Header totals: calls, failures, rates, top failing tools", nil, Overview{}},
	{"/api/v1/tools", "Tool definition versions (from tools/list) seen in the range or in force at its start, with first and last sighting and when each came into force",
		nil, queries.ToolVersion{}},
	{"/api/v1/schema-violations", "Argument and result paths that failed their tool's schema, with the share of validated calls and how many the server refused or accepted", []param{
		{"min_calls", "integer", "", "leave out rows with fewer calls (default 1)"},
		{"limit", "integer", "", "at most this many rows, most calls first (default 100)"},
	}, queries.SchemaViolation{}},
	{"/api/v1/unknown-tools", "Tool names the servers refused as unknown (UNKNOWN_TOOL), each with a verdict (answered, listed, removed, respelled, namespaced, misspelled, reworded, invented, no_known_tools) and the known tool it was most likely meant to be", []param{
		{"limit", "integer", "", "at most this many names, most refused calls first (default 100, at most 1000)"},
	}, queries.UnknownTool{}},
	{"/api/v1/calls", "The calls behind the numbers: each matching call as its latest ingest classified it, with what the classification came from, newest first, a page at a time",
		callsParams, queries.Call{}},
}

var retryWindowParam = param{"retry_window", "string", "duration", "largest gap between a failed call and its retry, inclusive: a duration (90s) or whole seconds, 1s to 1h (default 60s)"}

// byParam is the chain endpoints' grouping; with by=pair each row carries
// pairFields as well.
var byParam = param{"by", "string", "", "tool (default): one row per tool, same-named tools of different tenants and servers added up; pair: one row per tenant, server and tool, each row naming its tenant and server"}

// clientByParam is the grouping of /recalls and /retry-outcomes: byParam's,
// and per client (endpointEnums).
var clientByParam = param{"by", "string", "", byParam.description + "; client: one row per client as well, each row naming its client (the clientInfo name of the failure's or chain's session, \"\" when none was captured)"}

// endpointEnums lists the values of a parameter on one endpoint where they
// differ from paramEnums'.
var endpointEnums = map[string]map[string][]string{
	"/api/v1/recalls":        {"by": {"tool", "pair", "client"}},
	"/api/v1/retry-outcomes": {"by": {"tool", "pair", "client"}},
}

// paramEnums lists the values a parameter takes, where it takes few.
var paramEnums = map[string][]string{"by": {"tool", "pair"}, "category": categoryNames()}

// fieldEnums lists the values a row field takes, where it takes few.
var fieldEnums = map[string][]string{"verdict": queries.Verdicts, "outcome": queries.LoopOutcomes}

// pairFields are the row fields that by=pair adds, first in each row.
var pairFields = []string{"tenant", "server"}

// openAPI builds the OpenAPI 3.0 document of the analytics endpoints.
func openAPI() map[string]any {
	paths := map[string]any{}
	for _, ep := range endpoints {
		var ps []any
		for _, p := range append(append([]param{}, commonParams...), ep.params...) {
			schema := map[string]any{"type": p.typ}
			if p.format != "" {
				schema["format"] = p.format
			}
			if enum, ok := paramEnums[p.name]; ok {
				schema["enum"] = enum
			}
			if enum, ok := endpointEnums[ep.path][p.name]; ok {
				schema["enum"] = enum
			}
			ps = append(ps, map[string]any{"name": p.name, "in": "query", "required": false,
				"description": p.description, "schema": schema})
		}
		rowSchema := schemaOf(reflect.TypeOf(ep.row))
		props := rowSchema["properties"].(map[string]any)
		for _, p := range ep.params {
			if p.name != "by" {
				continue
			}
			for _, name := range pairFields {
				props[name] = map[string]any{"type": "string", "description": "with by=pair only"}
			}
			if slices.Contains(endpointEnums[ep.path]["by"], "client") {
				props["client"] = map[string]any{"type": "string", "description": "with by=client only"}
			}
		}
		paths[ep.path] = map[string]any{"get": map[string]any{
			"summary":    ep.summary,
			"parameters": ps,
			"responses": map[string]any{
				"200": map[string]any{"description": "the rows for the range", "content": map[string]any{
					"application/json": map[string]any{"schema": map[string]any{
						"type": "object", "required": []string{"from", "to", "rows"},
						"properties": map[string]any{
							"from": map[string]any{"type": "string", "format": "date-time"},
							"to":   map[string]any{"type": "string", "format": "date-time"},
							"rows": map[string]any{"type": "array", "items": rowSchema},
						}}}}},
				"400": map[string]any{"$ref": "#/components/responses/BadRequest"},
			},
		}}
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{"title": "mcplens API", "version": "1",
			"description": "Why MCP tool calls fail, and whether their failures are classified right. Counts are integers; rates are numbers in [0,1]; rows are ordered deterministically."},
		"paths": paths,
		"components": map[string]any{"responses": map[string]any{"BadRequest": map[string]any{
			"description": "a bad or unknown parameter",
			"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
				"type": "object", "properties": map[string]any{"error": map[string]any{"type": "string"}}}}},
		}}},
	}
}

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf(json.RawMessage{})
)

// schemaOf describes a Go type as the JSON encoder writes it.
func schemaOf(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		return map[string]any{"description": "any JSON value", "nullable": true}
	case t.Kind() == reflect.Pointer:
		s := schemaOf(t.Elem())
		s["nullable"] = true
		return s
	case t.Kind() == reflect.String:
		return map[string]any{"type": "string"}
	case t.Kind() == reflect.Bool:
		return map[string]any{"type": "boolean"}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return map[string]any{"type": "integer"}
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return map[string]any{"type": "number"}
	case t.Kind() == reflect.Slice:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem())}
	case t.Kind() == reflect.Struct:
		props := map[string]any{}
		var required []string
		addFields(t, props, &required)
		return map[string]any{"type": "object", "properties": props, "required": required}
	}
	return map[string]any{}
}

func addFields(t reflect.Type, props map[string]any, required *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			addFields(f.Type, props, required)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = schemaOf(f.Type)
		if enum, ok := fieldEnums[name]; ok {
			props[name].(map[string]any)["enum"] = enum
		}
		*required = append(*required, name)
	}
}

// serveOpenAPI serves GET /api/v1/openapi.json.
func serveOpenAPI(c echo.Context) error {
	b, err := OpenAPIJSON()
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, "application/json", b)
}

// OpenAPIJSON returns the OpenAPI document, indented; docs/openapi.json is a
// copy that a test keeps in step.
func OpenAPIJSON() ([]byte, error) {
	b, err := json.MarshalIndent(openAPI(), "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
