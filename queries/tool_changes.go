package queries

import (
	"context"
	"time"
)

// definitionChangesAround returns the definition changes of the tools of f
// in [f.From - step, f.To): those attachDefinitionChanges can attach to a
// bucket of f. Only the tools that all and set (toolArgs) bind are read:
// the spikes' candidates, whose sightings took 0.08-0.11 s where every
// tool's took 0.18-0.31 s, for 405 tools of 1,820 on 18.16 (BENCHMARKS.md,
// sixteenth round).
func definitionChangesAround(ctx context.Context, db DB, f Filter, step time.Duration, all, set any) ([]DefinitionChange, error) {
	cf := f
	cf.From = f.From.Add(-step)
	return definitionChanges(ctx, db, cf, all, set)
}

// attachDefinitionChanges sets DefinitionChangedAt on the spikes whose
// tool's definition changed in [bucket - step, bucket + step): in the
// spiking bucket or in the one before it. Changes are those of the tools of
// the spikes' filter (any server of its), so a tool name shared by two
// servers takes the change of either.
func attachDefinitionChanges(changes []DefinitionChange, step time.Duration, spikes []Spike) {
	byTool := map[string][]time.Time{}
	for _, c := range changes {
		byTool[c.Tool] = append(byTool[c.Tool], c.Time)
	}
	for i := range spikes {
		s := &spikes[i]
		for _, t := range byTool[s.Tool] {
			if !t.Before(s.Time.Add(-step)) && t.Before(s.Time.Add(step)) && (s.DefinitionChangedAt == nil || t.After(*s.DefinitionChangedAt)) {
				at := t
				s.DefinitionChangedAt = &at
			}
		}
	}
}
