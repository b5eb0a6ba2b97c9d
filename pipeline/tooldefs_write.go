package pipeline

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"time"
)

//go:embed insert_tool_definitions.sql
var insertToolDefinitionsSQL string

//go:embed insert_tool_sightings.sql
var insertToolSightingsSQL string

//go:embed insert_call_violations.sql
var insertCallViolationsSQL string

// ToolSighting is one row of tool_sightings: a definition version seen at a
// time.
type ToolSighting struct {
	Time           time.Time
	TimeMs         int64
	Tenant         string
	Server         string
	Tool           string
	DefinitionHash uint64
	IngestedMs     int64
}

// Values returns the row in the column order of insert_tool_sightings.sql.
func (s *ToolSighting) Values() []any {
	return []any{s.Time, s.TimeMs, s.Tenant, s.Server, s.Tool, s.DefinitionHash, s.IngestedMs}
}

// ToolRows are the rows that tool-definition capture and schema validation
// produce, for the tool_definitions, tool_sightings and call_violations
// tables.
type ToolRows struct {
	Definitions []ToolDef
	Sightings   []ToolSighting
	Violations  []Violation
}

// Len is the number of rows.
func (r *ToolRows) Len() int { return len(r.Definitions) + len(r.Sightings) + len(r.Violations) }

// TableRows is one table's part of ToolRows: its insert column list and the
// rows in that order.
type TableRows struct {
	Table   string
	Insert  string // the INSERT statement with its column list
	Columns []string
	Rows    [][]any
}

// Tables splits r by table, in insert order; tables without rows are left
// out. Writer.WriteToolRows inserts them; test engines that clickhouse-go
// cannot reach insert the same rows another way.
func (r *ToolRows) Tables() []TableRows {
	var out []TableRows
	add := func(table, insert string, n int, row func(i int) []any) {
		if n == 0 {
			return
		}
		t := TableRows{Table: table, Insert: insert, Columns: insertColumns(insert), Rows: make([][]any, n)}
		for i := range t.Rows {
			t.Rows[i] = row(i)
		}
		out = append(out, t)
	}
	add("tool_definitions", insertToolDefinitionsSQL, len(r.Definitions), func(i int) []any { return r.Definitions[i].Values() })
	add("tool_sightings", insertToolSightingsSQL, len(r.Sightings), func(i int) []any { return r.Sightings[i].Values() })
	add("call_violations", insertCallViolationsSQL, len(r.Violations), func(i int) []any { return r.Violations[i].Values() })
	return out
}

// ToolTableColumns returns the insert column list of each table that
// ToolRows fills, for the schema test.
func ToolTableColumns() map[string][]string {
	return map[string][]string{
		"tool_definitions": insertColumns(insertToolDefinitionsSQL),
		"tool_sightings":   insertColumns(insertToolSightingsSQL),
		"call_violations":  insertColumns(insertCallViolationsSQL),
	}
}

// insertColumns reads the column list of an "INSERT INTO t (a, b, ...)".
func insertColumns(insert string) []string {
	s := insert[strings.Index(insert, "INSERT"):]
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	parts := strings.Split(s[open+1:end], ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// WriteToolRows inserts r with one native batch per table, in the order of
// Tables: definitions before the sightings that refer to them. A failure
// leaves the tables before it written; the rows are idempotent
// (ReplacingMergeTree keyed by their identity), so the caller may send all
// of r again.
func (w *Writer) WriteToolRows(ctx context.Context, r *ToolRows) error {
	for _, t := range r.Tables() {
		if err := w.writeTable(ctx, &t); err != nil {
			return err
		}
	}
	return nil
}

func (w *Writer) writeTable(ctx context.Context, t *TableRows) error {
	start := time.Now()
	batch, err := w.conn.PrepareBatch(ctx, t.Insert)
	if err != nil {
		return fmt.Errorf("prepare insert into %s: %w", t.Table, err)
	}
	defer batch.Close() //nolint:errcheck // releases the connection when Send is not reached
	for i, row := range t.Rows {
		if err := batch.Append(row...); err != nil {
			return fmt.Errorf("insert into %s: %w", t.Table, &RowError{Index: i, Err: err})
		}
	}
	if batch.Rows() != len(t.Rows) {
		return fmt.Errorf("batch holds %d of %d %s rows", batch.Rows(), len(t.Rows), t.Table)
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("insert %d rows into %s: %w", len(t.Rows), t.Table, err)
	}
	w.m.observeInsert(t.Table, len(t.Rows), time.Since(start))
	return nil
}
