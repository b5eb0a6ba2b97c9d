package queries

import (
	"context"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2"
)

var (
	schemaViolationsSQL = mustSQL("schema_violations.sql")
	schemaValidatedSQL  = mustSQL("schema_validated.sql")
)

// SchemaViolationOptions narrow GET /api/v1/schema-violations.
type SchemaViolationOptions struct {
	MinCalls int64 // leave out rows with fewer calls (default 1)
	Limit    int64 // at most this many rows, most calls first (default 100)
}

// SchemaViolation is one way calls of a tool failed its schema: a path of
// the arguments or of the structured result, and why (docs/schemas.md).
type SchemaViolation struct {
	Tool           string `json:"tool"`
	DefinitionHash string `json:"definition_hash"` // the version the calls were checked against
	Side           string `json:"side"`            // arguments or result
	Path           string `json:"path"`            // "department", "filters.state", "lines[].qty"; "$" is the whole value
	Reason         string `json:"reason"`          // missing_required, wrong_type, not_in_enum, ...
	Detail         string `json:"detail"`          // what the schema allows
	Suggestion     string `json:"suggestion"`      // the allowed value or property closest to what was sent; "" when none is close
	Calls          uint64 `json:"calls"`
	// InvalidArgumentCalls counts the calls the server refused as
	// INVALID_ARGUMENT; AcceptedCalls those it answered without failing:
	// the server accepted input its own schema rules out.
	InvalidArgumentCalls uint64 `json:"invalid_argument_calls"`
	AcceptedCalls        uint64 `json:"accepted_calls"`
	// ValidatedCalls is the tool's validated calls in the range, every
	// version; Share is Calls / ValidatedCalls.
	ValidatedCalls uint64  `json:"validated_calls"`
	Share          float64 `json:"share"`
}

// SchemaViolations returns the schema violations of the calls in [f.From,
// f.To), most calls first (then by tool, side, path, reason, version and
// suggestion).
func SchemaViolations(ctx context.Context, db DB, f Filter, o SchemaViolationOptions) ([]SchemaViolation, error) {
	return schemaViolations(ctx, db, f, o, schemaViolationsSQL, schemaValidatedSQL)
}

// schemaViolations answers SchemaViolations with the given statements for
// the rows and for the validated calls per tool (the differential test
// passes the former FINAL statements, its definition).
func schemaViolations(ctx context.Context, db DB, f Filter, o SchemaViolationOptions, violationsSQL, validatedSQL string) ([]SchemaViolation, error) {
	if o.MinCalls <= 0 {
		o.MinCalls = 1
	}
	if o.Limit <= 0 {
		o.Limit = 100
	}
	args := append(f.args(), clickhouse.Named("min_calls", o.MinCalls), clickhouse.Named("limit", o.Limit))
	var raw []struct {
		Tool       string `ch:"tool_name"`
		Hash       uint64 `ch:"hash_"`
		Side       string `ch:"side_"`
		Path       string `ch:"path_"`
		Reason     string `ch:"reason_"`
		Suggestion string `ch:"suggestion_"`
		Detail     string `ch:"detail_"`
		Calls      uint64 `ch:"calls_n"`
		Invalid    uint64 `ch:"invalid_n"`
		Accepted   uint64 `ch:"accepted_n"`
	}
	if err := db.Select(ctx, &raw, violationsSQL, args...); err != nil {
		return nil, fmt.Errorf("schema violations: %w", err)
	}
	if len(raw) == 0 {
		return nil, nil
	}
	var validated []struct {
		Tool string `ch:"tool_name"`
		N    uint64 `ch:"validated_n"`
	}
	if err := db.Select(ctx, &validated, validatedSQL, f.args()...); err != nil {
		return nil, fmt.Errorf("schema-validated calls: %w", err)
	}
	byTool := map[string]uint64{}
	for _, v := range validated {
		byTool[v.Tool] = v.N
	}
	out := make([]SchemaViolation, len(raw))
	for i, r := range raw {
		out[i] = SchemaViolation{Tool: r.Tool, DefinitionHash: HashString(r.Hash), Side: r.Side, Path: r.Path,
			Reason: r.Reason, Detail: r.Detail, Suggestion: r.Suggestion, Calls: r.Calls,
			InvalidArgumentCalls: r.Invalid, AcceptedCalls: r.Accepted, ValidatedCalls: byTool[r.Tool],
			Share: ratio(float64(r.Calls), float64(byTool[r.Tool]))}
	}
	return out, nil
}
