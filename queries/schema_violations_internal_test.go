package queries

import "context"

// SchemaViolationsFrom is SchemaViolations with the given statements for
// the rows and the validated calls, for the external tests.
func SchemaViolationsFrom(ctx context.Context, db DB, f Filter, o SchemaViolationOptions, violationsSQL, validatedSQL string) ([]SchemaViolation, error) {
	return schemaViolations(ctx, db, f, o, violationsSQL, validatedSQL)
}
