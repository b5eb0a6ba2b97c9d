package gauges

import (
	"context"
	"time"

	"github.com/mcplens/mcplens/queries"
)

// definitionChanges returns, per (tenant, server, tool) whose definition
// changed in the 24 hours before now, the time of the latest change as a
// series of mcplens_tool_definition_changed_timestamp_seconds: what the
// Prometheus rule MCPDefinitionChangeInvalidArguments joins with the
// window's INVALID_ARGUMENT counts.
func definitionChanges(ctx context.Context, db queries.DB, now time.Time) ([]series, error) {
	changes, err := queries.DefinitionChanges(ctx, db, queries.Filter{From: now.Add(-24 * time.Hour), To: now})
	if err != nil {
		return nil, err
	}
	latest := map[[3]string]time.Time{}
	var order [][3]string
	for _, c := range changes {
		k := [3]string{c.Tenant, c.Server, c.Tool}
		prev, ok := latest[k]
		if !ok {
			order = append(order, k)
		}
		if !ok || c.Time.After(prev) {
			latest[k] = c.Time
		}
	}
	out := make([]series, 0, len(order))
	for _, k := range order {
		out = append(out, series{definitionChangedDesc, float64(latest[k].Unix()), []string{k[0], k[1], k[2]}})
	}
	return out, nil
}
