package compact_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcplens/mcplens/chtest"
	"github.com/mcplens/mcplens/compact"
)

// BenchmarkRollupHoursQuiet times RollupHours' first run over a day whose
// calls are in two hours only, 1+quiet hours apart, on a new database of
// each engine: the two hours folded and the quiet hours between them
// recorded as empty folds. The difference between quiet=22 and quiet=0,
// divided by 22, is what a quiet hour costs the job (BENCHMARKS.md, the
// forty-fourth round).
func BenchmarkRollupHoursQuiet(b *testing.B) {
	ctx := context.Background()
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	for i, name := range []string{"server", "chdb"} {
		for _, quiet := range []int{0, 22} {
			b.Run(fmt.Sprintf("%s/quiet=%d", name, quiet), func(b *testing.B) {
				first, last := day, day.Add(time.Duration(quiet+1)*time.Hour)
				for b.Loop() {
					b.StopTimer()
					e := chtest.Engines(b)[i]
					e.Insert(b, slices.Concat(mixedCalls(first, 5, 1, 1), mixedCalls(last, 5, 100, 1)))
					b.StartTimer()
					res, err := compact.RollupHours(ctx, e.DB, time.Now(), 48*time.Hour, 0)
					if err != nil || len(res.Folded) != 2 || len(res.Quiet) != quiet {
						b.Fatalf("%+v %v; want 2 hours folded and %d quiet", res, err, quiet)
					}
				}
			})
		}
	}
}
