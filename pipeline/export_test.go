package pipeline

// SetWriterBlocks makes w send blocks of rows rows and run hook before each
// block but the last (nil: none), for tests of WriteCalls.
func SetWriterBlocks(w *Writer, rows int, hook func(sent int) error) {
	w.blockRows, w.beforeFlush = rows, hook
}

// SortOrder is the order in which WriteBatch sends the calls of b: their
// sort keys as WriteBatch reads them from the records, sorted.
func SortOrder(b *Batch) []int32 {
	keys, _, err := b.sortKeys()
	if err != nil {
		panic(err)
	}
	return sortOrder(keys)
}

// DriverRow is the row WriteCalls hands the driver for c.
func DriverRow(c *Call) []any { var r driverRow; return r.of(c) }

// DriverRows builds rows as WriteBatch does, one after the other.
type DriverRows struct{ r driverRow }

func (d *DriverRows) Of(c *Call) []any { return d.r.of(c) }

// LowCardColumns is the number of LowCardinality columns the Writer boxes.
const LowCardColumns = lowCardColumns

// DecodeEach decodes every call of b as WriteBatch's blocks do, one reused
// Call, and returns how many it decoded and the first error.
func DecodeEach(b *Batch) (n int, err error) {
	b.each(func(_ *Call, e error) {
		if e != nil && err == nil {
			err = e
		}
		n++
	})
	return n, err
}
