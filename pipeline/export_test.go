package pipeline

// SetWriterBlocks makes w send blocks of rows rows and run hook before each
// block but the last (nil: none), for tests of WriteCalls.
func SetWriterBlocks(w *Writer, rows int, hook func(sent int) error) {
	w.blockRows, w.beforeFlush = rows, hook
}

// SortOrder is sortOrder, for tests and benchmarks of the INSERT order.
func SortOrder(calls []Call) []int32 { return sortOrder(calls) }

// DriverRow is the row WriteCalls hands the driver for c.
func DriverRow(c *Call) []any { var r driverRow; return r.of(c) }
