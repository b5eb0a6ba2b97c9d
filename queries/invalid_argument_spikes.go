package queries

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

var (
	invalidArgumentSpikesSQL       = mustSQL("invalid_argument_spikes.sql")
	invalidArgumentSpikesRollupSQL = mustSQL("invalid_argument_spikes_rollup.sql")
	invalidArgumentTopArgsSQL      = mustSQL("invalid_argument_top_args.sql")
)

// SpikeOptions are the thresholds of an INVALID_ARGUMENT spike.
type SpikeOptions struct {
	Step     time.Duration // bucket width (default 1 h)
	Baseline time.Duration // how far back the baseline share looks (default 7 d)
	Ratio    float64       // share must be at least Ratio × baseline share (default 3)
	MinShare float64       // and at least this share (default 0.05)
	MinCalls int64         // in a bucket with at least this many calls (default 20)
	TopArgs  int64         // argument key=value pairs reported per spike (default 5)
}

func (o SpikeOptions) withDefaults() SpikeOptions {
	if o.Step <= 0 {
		o.Step = time.Hour
	}
	if o.Baseline <= 0 {
		o.Baseline = 7 * 24 * time.Hour
	}
	if o.Ratio <= 0 {
		o.Ratio = 3
	}
	if o.MinShare <= 0 {
		o.MinShare = 0.05
	}
	if o.MinCalls <= 0 {
		o.MinCalls = 20
	}
	if o.TopArgs <= 0 {
		o.TopArgs = 5
	}
	return o
}

// ArgCount is one argument key=value and how many invalid calls sent it.
type ArgCount struct {
	ArgKey   string `json:"arg_key"`
	ArgValue string `json:"arg_value"`
	Count    uint64 `json:"count"`
}

// Spike is one bucket in which a tool's INVALID_ARGUMENT share spiked.
type Spike struct {
	Tool          string     `json:"tool"`
	Time          time.Time  `json:"time"`
	Calls         uint64     `json:"calls"`
	Invalid       uint64     `json:"invalid"`
	Share         float64    `json:"share"`
	BaselineShare float64    `json:"baseline_share"`
	Ratio         float64    `json:"ratio"` // share / baseline share; 0 when the baseline share is 0
	TopArgs       []ArgCount `json:"top_args"`
	// DefinitionChangedAt is when the tool's definition changed in the
	// bucket or in the one before it (the latest such change; tool_changes.go),
	// null when it did not: a spike right after a change points at the change.
	DefinitionChangedAt *time.Time `json:"definition_changed_at"`
}

// InvalidArgumentSpikes returns the buckets of [f.From, f.To) in which a
// tool's INVALID_ARGUMENT share spiked against its own baseline, with the
// argument values the invalid calls sent most, ordered by tool and time.
// Buckets start at f.From.
//
// When the step is a multiple of RollupBucket the baseline before f.From
// comes from the calls_5m rollup and only the range itself from the raw
// calls (invalid_argument_spikes_rollup.sql): reading eight days of raw calls
// took seconds on ClickHouse 18.16. The rows are those of the raw form except
// in the baseline of a call re-ingested with another category, or with a
// From off the 5-minute grid (the SQL file says how); otherwise the raw form
// answers.
func InvalidArgumentSpikes(ctx context.Context, db DB, f Filter, o SpikeOptions) ([]Spike, error) {
	o = o.withDefaults()
	return invalidArgumentSpikes(ctx, db, f, o, o.Step%RollupBucket == 0)
}

// InvalidArgumentSpikesFrom is InvalidArgumentSpikes with the baseline's
// source forced: the rollup when rollup is true (the step must then be a
// multiple of RollupBucket), else the raw calls.
func InvalidArgumentSpikesFrom(ctx context.Context, db DB, f Filter, o SpikeOptions, rollup bool) ([]Spike, error) {
	return invalidArgumentSpikes(ctx, db, f, o.withDefaults(), rollup)
}

func invalidArgumentSpikes(ctx context.Context, db DB, f Filter, o SpikeOptions, rollup bool) ([]Spike, error) {
	step := int64(o.Step / time.Second)
	origin := f.From.Unix() - (int64(o.Baseline/time.Second)+step-1)/step*step
	args := append(f.args(),
		clickhouse.Named("step_s", step),
		clickhouse.Named("origin_s", origin),
		clickhouse.Named("baseline_s", int64(o.Baseline/time.Second)),
		clickhouse.Named("ratio", o.Ratio),
		clickhouse.Named("min_share", o.MinShare),
		clickhouse.Named("min_calls", o.MinCalls),
		clickhouse.Named("per_bucket", o.TopArgs),
		clickhouse.Named("lo_s", f.From.Unix()-f.From.Unix()%int64(RollupBucket/time.Second)))
	q := invalidArgumentSpikesSQL
	if rollup {
		q = invalidArgumentSpikesRollupSQL
	}
	var raw []struct {
		Tool        string `ch:"tool_name"`
		Bucket      int64  `ch:"bucket_s"`
		Calls       uint64 `ch:"calls_n"`
		Invalid     uint64 `ch:"invalid_n"`
		BaseCalls   uint64 `ch:"base_calls"`
		BaseInvalid uint64 `ch:"base_invalid"`
	}
	if err := db.Select(ctx, &raw, q, args...); err != nil {
		return nil, fmt.Errorf("invalid-argument spikes: %w", err)
	}
	if len(raw) == 0 {
		return nil, nil
	}
	var top []struct {
		Tool   string `ch:"tool_name"`
		Bucket int64  `ch:"bucket_s"`
		Key    string `ch:"arg_key"`
		Value  string `ch:"arg_value"`
		N      uint64 `ch:"n"`
	}
	if err := db.Select(ctx, &top, invalidArgumentTopArgsSQL, args...); err != nil {
		return nil, fmt.Errorf("invalid-argument top arguments: %w", err)
	}
	type key struct {
		tool   string
		bucket int64
	}
	byBucket := map[key][]ArgCount{}
	for _, t := range top {
		k := key{t.Tool, t.Bucket}
		byBucket[k] = append(byBucket[k], ArgCount{ArgKey: t.Key, ArgValue: t.Value, Count: t.N})
	}
	out := make([]Spike, 0, len(raw))
	for _, r := range raw {
		s := Spike{Tool: r.Tool, Time: time.Unix(r.Bucket, 0).UTC(), Calls: r.Calls, Invalid: r.Invalid,
			Share:         ratio(float64(r.Invalid), float64(r.Calls)),
			BaselineShare: ratio(float64(r.BaseInvalid), float64(r.BaseCalls)),
			TopArgs:       byBucket[key{r.Tool, r.Bucket}]}
		s.Ratio = ratio(s.Share, s.BaselineShare)
		if s.TopArgs == nil {
			s.TopArgs = []ArgCount{}
		}
		out = append(out, s)
	}
	if err := attachDefinitionChanges(ctx, db, f, o.Step, out); err != nil {
		return nil, err
	}
	return out, nil
}
