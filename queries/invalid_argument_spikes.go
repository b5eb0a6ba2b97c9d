package queries

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

var (
	invalidArgumentCountsSQL         = mustSQL("invalid_argument_counts.sql")
	invalidArgumentLatestSQL         = mustSQL("invalid_argument_latest.sql")
	invalidArgumentBaselineRollupSQL = mustSQL("invalid_argument_baseline_rollup.sql")
	invalidArgumentTopArgsSQL        = mustSQL("invalid_argument_top_args.sql")
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
// It counts the range's calls first, with its INVALID_ARGUMENT rows
// (invalid_argument_counts.sql): at least its INVALID_ARGUMENT calls, since
// a re-ingested call's copies each count. The 5-minute cells that complete
// hours were folded into (compact.RollupHours) are read from their folds
// when a cell lies whole in one bucket, every other call raw. The tools
// with a bucket that passes, by those counts, the thresholds the baseline
// does not enter (MinCalls, MinShare) are the candidates: only they can
// spike, and the rest is read for them alone. A healthy fleet has few,
// often none, and then the range's one statement is all (the default
// 7-day baseline reads seven times a day's range). When the step is a
// multiple of RollupBucket the baseline before f.From comes from the
// calls_5m rollup (invalid_argument_baseline_rollup.sql): reading eight
// days of raw calls took seconds on ClickHouse 18.16. Its folded hours that
// count in every range bucket's baseline are added up into one cell per
// tool (baselineLump). The rows are those of the raw baseline except for a
// call re-ingested with another category, or with a From off the 5-minute
// grid (the SQL file and docs/analytics.md say how); otherwise the baseline
// is counted as the range is. queries/testdata/invalid_argument_spikes_final.sql
// is the definition, in one statement over calls FINAL; the tests compare
// the two.
//
// For the candidates, the range's INVALID_ARGUMENT calls (the calls whose
// latest copy is one) with the top arguments of their buckets
// (invalid_argument_top_args.sql), the baseline and their definition
// changes are three queries run at the same time on db (which must be safe
// for concurrent use, as driver.Conn is): 1.1x sooner than one after the
// other on 18.16 with 405 candidates (BENCHMARKS.md, fourteenth round). The
// first error cancels the others and is returned.
func InvalidArgumentSpikes(ctx context.Context, db DB, f Filter, o SpikeOptions) ([]Spike, error) {
	o = o.withDefaults()
	return invalidArgumentSpikes(ctx, db, f, o, o.Step%RollupBucket == 0, maxToolSetBytes)
}

// InvalidArgumentSpikesFrom is InvalidArgumentSpikes with the baseline's
// source forced: the rollup when rollup is true (the step must then be a
// multiple of RollupBucket), else the raw calls.
func InvalidArgumentSpikesFrom(ctx context.Context, db DB, f Filter, o SpikeOptions, rollup bool) ([]Spike, error) {
	return invalidArgumentSpikes(ctx, db, f, o.withDefaults(), rollup, maxToolSetBytes)
}

// spikeCell is the calls and INVALID_ARGUMENT calls of one tool in one
// bucket, as the counting queries return them (invalid_argument_counts.sql
// returns INVALID_ARGUMENT rows in Invalid; see callCells).
type spikeCell struct {
	Tool    string `ch:"tool_name"`
	Bucket  int64  `ch:"bucket_s"`
	Calls   int64  `ch:"calls_n"`
	Invalid int64  `ch:"invalid_n"`
}

// spikeBounds are what the spike rule needs of a query's buckets: the
// range's buckets start at From, and a bucket's baseline is the buckets that
// start in the Baseline seconds before it.
type spikeBounds struct {
	From, Baseline int64
}

// baselineLump is the baseline hours that every bucket of a range counts:
// the folded ones among [From, To) (whole UTC hours, seconds) are read
// added up per tool into one cell at Bucket, which lies in every range
// bucket's baseline, instead of one cell per tool and bucket
// (invalid_argument_baseline_rollup.sql). Empty when To <= From.
type baselineLump struct {
	Bucket, From, To int64
}

// lump returns the baseline lump of the range whose buckets start at
// b.From and whose calls end before hiMs, the baseline's buckets at origin
// (step seconds each) and its rollup cells before lo. A bucket's baseline
// is the buckets that start in [bucket - Baseline, bucket), so a baseline
// bucket that starts at or after the last range bucket's start minus
// Baseline, and before b.From, is in every range bucket's baseline: the
// first such bucket of the grid is the lump's, and the whole hours from it
// up to lo, whose 5-minute cells all fall in such buckets, are its hours.
func (b spikeBounds) lump(origin, step, lo, hiMs int64) baselineLump {
	last := b.From // the last range bucket's start
	if end := floorDiv(hiMs-1, 1000); end > b.From {
		last += (end - b.From) / step * step
	}
	first := origin
	if d := last - b.Baseline - origin; d > 0 {
		first += (d + step - 1) / step * step
	}
	l := baselineLump{Bucket: first, From: (first + 3599) / 3600 * 3600, To: lo / 3600 * 3600}
	if l.To < l.From {
		l.To = l.From
	}
	return l
}

// maxToolSetBytes bounds the tool names a spike query lists for IN: past it
// the query reads every tool, so that a fleet of thousands of tools stays
// far below ClickHouse's max_query_size (256 KiB by default).
const maxToolSetBytes = 32 << 10

// invalidArgumentSpikes answers InvalidArgumentSpikes, listing at most
// maxSet bytes of tool names in a query.
func invalidArgumentSpikes(ctx context.Context, db DB, f Filter, o SpikeOptions, rollup bool, maxSet int) ([]Spike, error) {
	step := int64(o.Step / time.Second)
	bounds := spikeBounds{From: f.From.Unix(), Baseline: int64(o.Baseline / time.Second)}
	origin := bounds.From - (bounds.Baseline+step-1)/step*step // the first baseline bucket
	// The range is counted from lo: from itself for a raw baseline, the
	// start of from's 5-minute cell when the rollup's cells end there.
	lo := bounds.From
	if rollup {
		lo -= lo % int64(RollupBucket/time.Second)
	}
	hiS, hiMs := f.To.Unix(), f.To.UnixMilli()
	lump := bounds.lump(origin, step, lo, hiMs)
	args := append(f.args(),
		clickhouse.Named("step_s", step),
		clickhouse.Named("origin_s", origin),
		clickhouse.Named("bucket_rows", o.TopArgs+1),
		clickhouse.Named("lo_s", lo),
		clickhouse.Named("lump_s", lump.Bucket),
		clickhouse.Named("lump_lo_s", lump.From),
		clickhouse.Named("lump_hi_s", lump.To))
	args = slices.Clip(args) // each query appends its own arguments
	// between binds the counting queries' range [loS, hiMs) (hiS its second).
	between := func(loS, hiS, hiMs int64, all, set any) []any {
		return append(args, clickhouse.Named("count_lo_s", loS), clickhouse.Named("count_hi_s", hiS),
			clickhouse.Named("count_hi_ms", hiMs), all, set)
	}
	all, set := toolArgs(nil, 0)
	cells, bound, err := callCells(ctx, db, between(lo, hiS, hiMs, all, set))
	if err != nil {
		return nil, fmt.Errorf("invalid-argument spikes: range: %w", err)
	}
	// Past the floor by INVALID_ARGUMENT rows: every tool past it by
	// INVALID_ARGUMENT calls, and more only when a copy of a call was
	// reclassified.
	tools := spikeCandidates(bound, bounds, o)
	if len(tools) == 0 {
		return nil, nil
	}
	// The candidates' INVALID_ARGUMENT calls in the range with the top
	// arguments of their buckets (a bucket's top arguments do not depend on
	// the other tools listed, and a spike's tool is a candidate), their
	// baseline and their definition changes at once; the first error
	// cancels the others.
	var base []spikeCell
	var top []struct {
		Tool   string `ch:"tool_name"`
		Bucket int64  `ch:"bucket_s"`
		Kind   uint8  `ch:"kind"`
		Key    string `ch:"arg_key"`
		Value  string `ch:"arg_value"`
		N      uint64 `ch:"n"`
	}
	var changes []DefinitionChange
	all, set = toolArgs(tools, maxSet)
	err = together(ctx,
		func(ctx context.Context) error {
			if err := db.Select(ctx, &top, invalidArgumentTopArgsSQL, between(lo, hiS, hiMs, all, set)...); err != nil {
				return fmt.Errorf("invalid-argument spikes: range INVALID_ARGUMENT calls: %w", err)
			}
			return nil
		},
		func(ctx context.Context) error {
			var err error
			if rollup {
				err = db.Select(ctx, &base, invalidArgumentBaselineRollupSQL, append(args, all, set)...)
			} else {
				base, err = rawCells(ctx, db, between(origin, lo, lo*1000, all, set))
			}
			if err != nil {
				return fmt.Errorf("invalid-argument spikes: baseline: %w", err)
			}
			return nil
		},
		func(ctx context.Context) error {
			var err error
			changes, err = definitionChangesAround(ctx, db, f, o.Step, all, set)
			return err
		})
	if err != nil {
		return nil, err
	}
	type key struct {
		tool   string
		bucket int64
	}
	byBucket := map[key][]ArgCount{}
	latest := make([]spikeCell, 0, len(top))
	for _, t := range top {
		if t.Kind == 0 { // the bucket's INVALID_ARGUMENT calls
			latest = append(latest, spikeCell{Tool: t.Tool, Bucket: t.Bucket, Invalid: int64(t.N)})
			continue
		}
		k := key{t.Tool, t.Bucket}
		byBucket[k] = append(byBucket[k], ArgCount{ArgKey: t.Key, ArgValue: t.Value, Count: t.N})
	}
	raw := findSpikes(slices.Concat(cells, latest, base), bounds, o)
	if len(raw) == 0 {
		return nil, nil
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
	attachDefinitionChanges(changes, o.Step, out)
	return out, nil
}

// callCells counts the calls of the range and tools that args bind
// (invalid_argument_counts.sql, several rows a tool and bucket, added up
// here): cells holds them without INVALID_ARGUMENT
// calls, which invalid_argument_latest.sql counts, and bound the same cells
// with their INVALID_ARGUMENT rows, at least their INVALID_ARGUMENT calls
// (each copy of a call counts): the spike floor a tool does not pass by
// these, it does not pass at all.
func callCells(ctx context.Context, db DB, args []any) (cells, bound []spikeCell, err error) {
	var rows []spikeCell
	if err := db.Select(ctx, &rows, invalidArgumentCountsSQL, args...); err != nil {
		return nil, nil, err
	}
	bound = addCells(rows)
	cells = slices.Clone(bound)
	for i := range cells {
		cells[i].Invalid = 0
	}
	return cells, bound, nil
}

// rawCells counts the calls and the INVALID_ARGUMENT calls of the range
// and tools that args bind without the calls_5m rollup, one after the
// other: the calls as the range's are counted (callCells: whole folded
// cells from their folds, the rest raw), the INVALID_ARGUMENT calls from
// the raw calls (invalid_argument_latest.sql). Each (tool, bucket) comes in
// two cells, its calls and its INVALID_ARGUMENT calls, which findSpikes
// adds.
func rawCells(ctx context.Context, db DB, args []any) ([]spikeCell, error) {
	calls, _, err := callCells(ctx, db, args)
	if err != nil {
		return nil, err
	}
	var latest []spikeCell
	if err := db.Select(ctx, &latest, invalidArgumentLatestSQL, args...); err != nil {
		return nil, err
	}
	return append(calls, latest...), nil
}

// toolArgs binds @all_tools and @tools for "(@all_tools = 1 OR tool IN
// @tools)": the tools as a set when there are some and their names take at
// most maxSet bytes, else every tool (and one empty name: IN () is not valid
// SQL). A set for IN, not an array for has(): IN reads a LowCardinality
// column's dictionary, and has() over every row made the rollup's baseline a
// quarter slower on ClickHouse 26.7 (BENCHMARKS.md).
func toolArgs(tools []string, maxSet int) (all, set any) {
	n := 0
	for _, t := range tools {
		n += len(t) + 4 // quotes, comma, space
	}
	if len(tools) == 0 || n > maxSet {
		return clickhouse.Named("all_tools", 1), clickhouse.Named("tools", clickhouse.GroupSet{Value: []any{""}})
	}
	names := make([]any, len(tools))
	for i, t := range tools {
		names[i] = t
	}
	return clickhouse.Named("all_tools", 0), clickhouse.Named("tools", clickhouse.GroupSet{Value: names})
}

// spikeRow is a bucket that spiked, with its baseline.
type spikeRow struct {
	Tool                                   string
	Bucket                                 int64
	Calls, Invalid, BaseCalls, BaseInvalid uint64
}

// passesFloor reports whether c is a bucket of the range that passes the
// thresholds in which the baseline has no part: MinCalls and MinShare.
func (b spikeBounds) passesFloor(c spikeCell, o SpikeOptions) bool {
	return c.Bucket >= b.From && c.Calls >= o.MinCalls && float64(c.Invalid) >= o.MinShare*float64(c.Calls)
}

// spikeCandidates returns, sorted, the tools of cells with a bucket that
// passes the floor: only their baselines can make a spike.
func spikeCandidates(cells []spikeCell, b spikeBounds, o SpikeOptions) []string {
	var tools []string
	for _, c := range cells {
		if b.passesFloor(c, o) {
			tools = append(tools, c.Tool)
		}
	}
	slices.Sort(tools)
	return slices.Compact(tools)
}

// addCells returns the cells added up per tool and bucket, in no order;
// cells is left as it is. The counts are added up without sorting them:
// over 7 days of 1,820 tools (305,000 cells) a sort cost 0.2-0.5 s of the
// endpoint on chDB (BENCHMARKS.md, nineteenth round); findSpikes sorts what
// is left once.
func addCells(cells []spikeCell) []spikeCell {
	type key struct {
		tool   string
		bucket int64
	}
	at := make(map[key]int, len(cells))
	out := make([]spikeCell, 0, len(cells))
	for _, c := range cells {
		k := key{c.Tool, c.Bucket}
		if i, ok := at[k]; ok {
			out[i].Calls += c.Calls
			out[i].Invalid += c.Invalid
			continue
		}
		at[k] = len(out)
		out = append(out, c)
	}
	return out
}

// findSpikes returns, ordered by tool and bucket, the buckets of the range
// that spike against their baseline: cells holds the counts of the range and
// of the baseline before it, a (tool, bucket) possibly in several cells,
// which are added: its calls and its INVALID_ARGUMENT calls, or a baseline
// bucket that the rollup and the raw calls share. A bucket's
// baseline is the sum of the tool's buckets that start in
// [bucket - Baseline, bucket). The ratio is compared as the definition does
// (testdata/invalid_argument_spikes_final.sql): invalid × base_calls ≥
// Ratio × base_invalid × calls, with 1 and 0 for an empty baseline.
func findSpikes(cells []spikeCell, b spikeBounds, o SpikeOptions) []spikeRow {
	merged := addCells(cells)
	slices.SortFunc(merged, func(x, y spikeCell) int {
		return cmp.Or(cmp.Compare(x.Tool, y.Tool), cmp.Compare(x.Bucket, y.Bucket))
	})
	var out []spikeRow
	for start := 0; start < len(merged); {
		end := start + 1
		for end < len(merged) && merged[end].Tool == merged[start].Tool {
			end++
		}
		tool := merged[start:end]
		// sums[i] holds the calls and invalid calls of tool[:i].
		sums := make([][2]int64, len(tool)+1)
		for i, c := range tool {
			sums[i+1] = [2]int64{sums[i][0] + c.Calls, sums[i][1] + c.Invalid}
		}
		for i, c := range tool {
			if !b.passesFloor(c, o) {
				continue
			}
			j := sort.Search(i, func(k int) bool { return tool[k].Bucket >= c.Bucket-b.Baseline })
			baseCalls, baseInvalid := sums[i][0]-sums[j][0], sums[i][1]-sums[j][1]
			den, num := baseCalls, baseInvalid
			if baseCalls == 0 {
				den, num = 1, 0
			}
			if float64(c.Invalid*den) >= o.Ratio*float64(num)*float64(c.Calls) {
				out = append(out, spikeRow{Tool: c.Tool, Bucket: c.Bucket, Calls: uint64(c.Calls), Invalid: uint64(c.Invalid),
					BaseCalls: uint64(baseCalls), BaseInvalid: uint64(baseInvalid)})
			}
		}
		start = end
	}
	return out
}
