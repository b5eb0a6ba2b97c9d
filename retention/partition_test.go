package retention

import (
	"testing"
	"time"
)

// TestPartitionEnd: the end of a daily and of a monthly partition, and the
// ids that are neither.
func TestPartitionEnd(t *testing.T) {
	for _, c := range []struct {
		id   string
		want time.Time
	}{
		{"20261129", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)},
		{"20261231", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"202611", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		{"202612", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"202602", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
	} {
		got, err := partitionEnd(c.id)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("partitionEnd(%q) = %v, %v; want %v", c.id, got, err, c.want)
		}
	}
	for _, id := range []string{"2026", "2026113", "202613", "20261132", "tuple()", ""} {
		if got, err := partitionEnd(id); err == nil {
			t.Errorf("partitionEnd(%q) = %v; want an error", id, got)
		}
	}
}
