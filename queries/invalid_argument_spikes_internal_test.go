package queries

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// WithDefaults fills o's zero thresholds as InvalidArgumentSpikes does, for
// the external tests.
func (o SpikeOptions) WithDefaults() SpikeOptions { return o.withDefaults() }

// InvalidArgumentSpikesListing is InvalidArgumentSpikesFrom with at most
// maxSet bytes of tool names listed per query, for the external tests.
func InvalidArgumentSpikesListing(ctx context.Context, db DB, f Filter, o SpikeOptions, rollup bool, maxSet int) ([]Spike, error) {
	return invalidArgumentSpikes(ctx, db, f, o.withDefaults(), rollup, maxSet)
}

// TestToolArgs checks that the tools are listed only while their names fit.
func TestToolArgs(t *testing.T) {
	cases := []struct {
		tools  []string
		maxSet int
		all    int
		set    []any
	}{
		{nil, 100, 1, []any{""}},
		{[]string{"a", "bc"}, 11, 0, []any{"a", "bc"}},
		{[]string{"a", "bc"}, 10, 1, []any{""}},
	}
	for _, c := range cases {
		all, set := toolArgs(c.tools, c.maxSet)
		gotAll := all.(driver.NamedValue).Value
		gotSet := set.(driver.NamedValue).Value.(clickhouse.GroupSet).Value
		if gotAll != c.all || !reflect.DeepEqual(gotSet, c.set) {
			t.Errorf("toolArgs(%q, %d) = %v, %v; want %v, %v", c.tools, c.maxSet, gotAll, gotSet, c.all, c.set)
		}
	}
}

// TestFindSpikes checks the spike rule on cells: the floor (MinCalls,
// MinShare) before the baseline, the baseline's window [bucket - Baseline,
// bucket) with both ends, cells of one bucket from two sources summed, an
// empty baseline compared with 0, and a ratio of exactly Ratio firing.
func TestFindSpikes(t *testing.T) {
	o := SpikeOptions{}.withDefaults() // ratio 3, share 5 %, 20 calls
	b := spikeBounds{From: 400, Baseline: 300}
	cell := func(tool string, bucket, calls, invalid int64) spikeCell {
		return spikeCell{Tool: tool, Bucket: bucket, Calls: calls, Invalid: invalid}
	}
	cases := []struct {
		name  string
		cells []spikeCell
		want  []spikeRow
	}{
		{"no baseline: any share above the floor", []spikeCell{cell("a", 400, 20, 1)},
			[]spikeRow{{"a", 400, 20, 1, 0, 0}}},
		{"below the share floor", []spikeCell{cell("a", 400, 21, 1)}, nil},
		{"too few calls", []spikeCell{cell("a", 400, 19, 19)}, nil},
		{"a baseline bucket is not reported", []spikeCell{cell("a", 300, 20, 20)}, nil},
		{"exactly three times the baseline fires", []spikeCell{cell("a", 100, 100, 5), cell("a", 400, 20, 3)},
			[]spikeRow{{"a", 400, 20, 3, 100, 5}}},
		{"just under three times does not", []spikeCell{cell("a", 100, 100, 5), cell("a", 400, 21, 3)}, nil},
		{"the window's first bucket counts, the one before does not", []spikeCell{
			cell("a", 0, 1000, 1000), cell("a", 100, 100, 1), cell("a", 400, 20, 2)},
			[]spikeRow{{"a", 400, 20, 2, 100, 1}}},
		{"a range bucket is in the next one's baseline", []spikeCell{cell("a", 400, 20, 2), cell("a", 500, 20, 2)},
			[]spikeRow{{"a", 400, 20, 2, 0, 0}}},
		{"cells of one bucket from two sources add up", []spikeCell{
			cell("a", 300, 50, 1), cell("a", 400, 20, 1), cell("a", 300, 50, 0)},
			[]spikeRow{{"a", 400, 20, 1, 100, 1}}},
		{"tools apart, ordered by tool and bucket", []spikeCell{
			cell("b", 500, 20, 20), cell("a", 400, 20, 20), cell("b", 400, 100, 0), cell("a", 300, 20, 20)},
			[]spikeRow{{"b", 500, 20, 20, 100, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := append([]spikeCell(nil), c.cells...)
			got := findSpikes(c.cells, b, o)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("findSpikes(%v)\n got %v\nwant %v", c.cells, got, c.want)
			}
			if !reflect.DeepEqual(in, c.cells) {
				t.Errorf("findSpikes changed its input: %v, was %v", c.cells, in)
			}
		})
	}
}

// TestSpikeCandidates checks that only tools with a range bucket past the
// floor have their baseline read, each once, sorted.
func TestSpikeCandidates(t *testing.T) {
	o := SpikeOptions{}.withDefaults()
	b := spikeBounds{From: 400, Baseline: 300}
	cells := []spikeCell{
		{Tool: "z", Bucket: 400, Calls: 40, Invalid: 2},
		{Tool: "healthy", Bucket: 400, Calls: 1000, Invalid: 1},
		{Tool: "quiet", Bucket: 500, Calls: 5, Invalid: 5},
		{Tool: "old", Bucket: 300, Calls: 40, Invalid: 40},
		{Tool: "a", Bucket: 500, Calls: 20, Invalid: 20},
		{Tool: "z", Bucket: 500, Calls: 20, Invalid: 20},
	}
	if got, want := spikeCandidates(cells, b, o), []string{"a", "z"}; !reflect.DeepEqual(got, want) {
		t.Errorf("candidates %v, want %v", got, want)
	}
	if got := spikeCandidates(cells[1:4], b, o); len(got) != 0 {
		t.Errorf("candidates of a healthy range %v, want none", got)
	}
}

// TestBaselineLump checks the baseline hours added up into one cell, on
// random ranges, steps (multiples of 5 minutes, as the rollup baseline
// needs), baselines and starts off the grid: the lump's cell lies in every
// range bucket's baseline and on the baseline's grid; every 5-minute cell
// of its hours falls, by its own bucket, in every range bucket's baseline
// too, and before the range's counted cells (lo); and the lump is as long
// as that allows, from the first such whole hour to lo's.
func TestBaselineLump(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 19))
	nonEmpty := 0
	for range 20000 {
		step := 300 * (1 + rng.Int64N(36))
		from := 1_795_000_000 + rng.Int64N(400_000)
		b := spikeBounds{From: from, Baseline: 1 + rng.Int64N(10*24*3600)}
		hiMs := from*1000 + 1 + rng.Int64N(3*24*3600*1000)
		origin := b.From - (b.Baseline+step-1)/step*step
		lo := from - from%300
		l := b.lump(origin, step, lo, hiMs)
		last := from + (floorDiv(hiMs-1, 1000)-from)/step*step
		name := fmt.Sprintf("from %d step %d baseline %d hi %d ms: %+v", from, step, b.Baseline, hiMs, l)
		if l.From%3600 != 0 || l.To%3600 != 0 || l.To < l.From {
			t.Fatalf("%s: hours not whole", name)
		}
		if l.To == l.From {
			continue
		}
		nonEmpty++
		if l.Bucket < last-b.Baseline || l.Bucket >= from || (l.Bucket-origin)%step != 0 {
			t.Fatalf("%s: the lump's cell is not a grid bucket in every range bucket's baseline [%d, %d)", name, last-b.Baseline, from)
		}
		grid := func(s int64) int64 { return origin + (s-origin)/step*step }
		for s := l.From; s < l.To; s += 300 {
			if g := grid(s); g < last-b.Baseline || g >= from || s >= lo {
				t.Fatalf("%s: cell %d (bucket %d) is not in every range bucket's baseline before lo %d", name, s, g, lo)
			}
		}
		if h := l.From - 3600; h >= origin && grid(h) >= last-b.Baseline {
			t.Fatalf("%s: the hour before the lump, %d, could be in it", name, h)
		}
		if l.To != lo/3600*3600 {
			t.Fatalf("%s: the lump ends before lo's hour", name)
		}
	}
	if nonEmpty < 5000 {
		t.Fatalf("only %d of the random ranges have a lump; the test checks too little", nonEmpty)
	}
}
