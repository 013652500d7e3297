package series

import (
	"hourglass/chunk"
	"hourglass/rollup"
	"hourglass/rowkey"
)

// Rollups of an hour written in several chunks (issue 13's ingest cost):
// a chunk sealed early (the open chunk full, or the WAL over
// -wal-max-bytes) leaves the rest of its hour to later chunks, and each
// later chunk's rollup would read the whole row back. When the flusher
// knows the row holds only its own cells and every one ends before the new
// chunk's first point, the hour's bucket is continued from the one last
// written, taken from the day cell cache, by the new points alone
// (rollup.Builder.Resume): the same bucket, bit for bit, as Compute over
// the whole row, float sums included, so the read side's promise that one
// bucket's float Sum is the point-order sum stays true. Otherwise (the
// cell not cached, a sub-hour interval, a bucket Resume cannot continue)
// the row is read back as before.

// continueHour returns the buckets of the hour of tsuid at each interval
// up to an hour, continued by pts from the buckets last written, the
// row's points before pts ending at prevLast ms; false when that cannot be
// done exactly without reading the row.
func (w *rollupWriter) continueHour(tsuid []byte, hour, prevLast int64, pts []chunk.Point) ([][]rollup.Bucket, bool) {
	if len(pts) == 0 || pts[0].T <= prevLast {
		return nil, false
	}
	out := make([][]rollup.Bucket, len(w.intervals))
	for k, iv := range w.intervals {
		switch {
		case iv > rowkey.HourMs:
			continue
		case iv < rowkey.HourMs:
			// Hour cells are not cached: read back.
			return nil, false
		}
		day := rollup.RowBase(hour)
		d, ok := w.cache.get(dayKey{string(tsuid), iv, day})
		if !ok || d.cell == nil {
			return nil, false
		}
		prev, ok := cellBucket(d.cell, day, hour)
		if !ok || (prev.N() > 0 && prev.LastT > prevLast) {
			return nil, false
		}
		var b rollup.Builder
		if !b.Resume(iv, prev, prevLast) {
			return nil, false
		}
		bs := make([]rollup.Bucket, 0, 1)
		for _, p := range pts {
			var err error
			if bs, err = b.Add(bs, p.T, p.V); err != nil {
				return nil, false
			}
		}
		out[k] = b.Flush(bs)
	}
	w.m.continued.Inc()
	return out, true
}

// cellBucket returns the bucket starting at start of a cell whose base is
// base; false if there is none or the cell does not decode.
func cellBucket(cell []byte, base, start int64) (rollup.Bucket, bool) {
	var it rollup.Iterator
	it.Reset(cell, base)
	for it.Next() {
		if b := it.At(); b.Start == start {
			return *b, true
		}
	}
	return rollup.Bucket{}, false
}

// rowLastT returns the last timestamp of the cells, and false if there are none.
func rowLastT(cells []cellSpan) (int64, bool) {
	if len(cells) == 0 {
		return 0, false
	}
	last := cells[0].last
	for _, cs := range cells[1:] {
		last = max(last, cs.last)
	}
	return last, true
}
