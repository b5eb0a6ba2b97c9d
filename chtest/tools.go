package chtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcplens/mcplens/pipeline"
)

// InsertTools writes tool definitions, sightings and schema violations:
// through pipeline.Writer on servers, as JSONEachRow on chDB.
func (e *Engine) InsertTools(t testing.TB, rows pipeline.ToolRows) {
	t.Helper()
	if err := e.InsertToolRows(context.Background(), &rows); err != nil {
		t.Fatalf("%s: %v", e.Name, err)
	}
}

// InsertToolRows is InsertTools for callers without a testing.TB.
func (e *Engine) InsertToolRows(ctx context.Context, rows *pipeline.ToolRows) error {
	if e.Conn != nil {
		return pipeline.NewWriter(e.Conn, pipeline.NewMetrics(prometheus.NewRegistry())).WriteToolRows(ctx, rows)
	}
	for _, tbl := range rows.Tables() {
		out := make([]map[string]any, len(tbl.Rows))
		for i, vals := range tbl.Rows {
			r := make(map[string]any, len(tbl.Columns))
			for j, c := range tbl.Columns {
				if tm, ok := vals[j].(time.Time); ok {
					r[c] = tm.UTC().Format("2006-01-02 15:04:05")
				} else {
					r[c] = vals[j]
				}
			}
			out[i] = r
		}
		if err := e.chdb.InsertJSONEachRow(tbl.Table, tbl.Columns, out); err != nil {
			return fmt.Errorf("insert %d rows into %s: %w", len(out), tbl.Table, err)
		}
	}
	return nil
}
