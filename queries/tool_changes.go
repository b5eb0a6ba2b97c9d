package queries

import (
	"context"
	"time"
)

// attachDefinitionChanges sets DefinitionChangedAt on the spikes whose
// tool's definition changed in [bucket - step, bucket + step): in the
// spiking bucket or in the one before it. Changes are read for the tools of
// f (any server of f's), so a tool name shared by two servers takes the
// change of either.
func attachDefinitionChanges(ctx context.Context, db DB, f Filter, step time.Duration, spikes []Spike) error {
	if len(spikes) == 0 {
		return nil
	}
	cf := f
	cf.From = f.From.Add(-step)
	changes, err := DefinitionChanges(ctx, db, cf)
	if err != nil {
		return err
	}
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
	return nil
}
