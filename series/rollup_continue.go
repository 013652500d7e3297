package series

import (
	"context"
	"fmt"
	"sort"

	"hourglass/chunk"
	"hourglass/rollup"
	"hourglass/rowkey"
	"hourglass/store"
)

// Rollups of an hour written in several chunks (issue 13's ingest cost):
// a chunk sealed early (the open chunk full, or the WAL over
// -wal-max-bytes) leaves the rest of its hour to later chunks, and each
// later chunk's rollup would read the whole row back. When the flusher
// knows the row holds only its own cells and every one ends before the new
// chunk's first point (rollupRow.follows), the hour's buckets are
// continued by the new points alone (rollup.Builder.Resume) from the ones
// last written: the 1h bucket from the day cell cache, the sub-hour
// buckets from the hour cells read back from the rollup table (a few
// buckets, where the raw row is the hour's points). The result is, bit for
// bit, Compute over the whole row, float sums included, so the read side's
// promise that one bucket's float Sum is the point-order sum stays true.
// Otherwise (the day cell not cached, no hour cell, a bucket Resume cannot
// continue) the row is read back as before.

// hourCellKey names an hour cell: a series, a sub-hour interval and an hour.
type hourCellKey struct {
	tsuid string
	iv    int64
	hour  int64
}

// continueRows sets the buckets of the rows that follow their row's
// points and can be continued, and marks them complete.
func (w *rollupWriter) continueRows(ctx context.Context, rows []rollupRow) error {
	var want []hourCellKey
	for _, r := range rows {
		if !r.follows {
			continue
		}
		for _, iv := range w.intervals {
			if iv < rowkey.HourMs {
				want = append(want, hourCellKey{string(r.tsuid), iv, r.hour})
			}
		}
	}
	cells, err := w.readHourCells(ctx, want)
	if err != nil {
		return err
	}
	for i := range rows {
		r := &rows[i]
		if !r.follows {
			continue
		}
		if bs, ok := w.continueHour(r.tsuid, r.hour, r.prevLast, r.pts, cells); ok {
			r.buckets, r.complete = bs, true
		}
		r.pts = nil
	}
	return nil
}

// readHourCells reads the hour cells of keys back from the rollup table.
func (w *rollupWriter) readHourCells(ctx context.Context, keys []hourCellKey) (map[hourCellKey][]rollup.Bucket, error) {
	out := map[hourCellKey][]rollup.Bucket{}
	if len(keys) == 0 {
		return out, nil
	}
	type dayRow struct {
		tsuid   string
		iv, day int64
	}
	byRow := map[string]dayRow{}
	wanted := make(map[hourCellKey]bool, len(keys))
	var ranges []store.KeyRange
	for _, k := range keys {
		wanted[k] = true
		row := rollup.AppendRowKey(nil, w.layout, []byte(k.tsuid), k.iv, k.hour)
		if _, ok := byRow[string(row)]; ok {
			continue
		}
		byRow[string(row)] = dayRow{k.tsuid, k.iv, rollup.RowBase(k.hour)}
		ranges = append(ranges, store.RowRange(row))
	}
	sort.Slice(ranges, func(i, j int) bool { return string(ranges[i].Start) < string(ranges[j].Start) })
	err := w.st.Scan(ctx, store.TableRollup, ranges, func(c store.Cell) bool {
		d, ok := byRow[string(c.Row)]
		if !ok || len(c.Qualifier) != rollup.QualifierLen {
			return true
		}
		q, err := rollup.ParseQualifier(c.Qualifier)
		if err != nil {
			return true
		}
		k := hourCellKey{d.tsuid, d.iv, d.day + q.Offset}
		if !wanted[k] {
			return true // another hour of the day
		}
		bs, err := rollup.DecodeCell(nil, c.Value, k.hour)
		if err != nil {
			// Left out: the row is read back and the cell replaced.
			w.m.errors.Inc()
			w.log.Warn("rollup: an unreadable hour cell is replaced", "row", fmt.Sprintf("%x", c.Row), "err", err)
			return true
		}
		out[k] = bs
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("series: reading rollup hour cells: %w", err)
	}
	return out, nil
}

// continueHour returns the buckets of the hour of tsuid at each interval
// up to an hour, continued by pts from the buckets last written (the 1h
// one in the day cell cache, the shorter ones in hourCells), the row's
// points before pts ending at prevLast ms; false when that cannot be done
// exactly without reading the row.
func (w *rollupWriter) continueHour(tsuid []byte, hour, prevLast int64, pts []chunk.Point, hourCells map[hourCellKey][]rollup.Bucket) ([][]rollup.Bucket, bool) {
	if len(pts) == 0 || pts[0].T <= prevLast {
		return nil, false
	}
	out := make([][]rollup.Bucket, len(w.intervals))
	for k, iv := range w.intervals {
		var prev []rollup.Bucket
		switch {
		case iv > rowkey.HourMs:
			continue
		case iv < rowkey.HourMs:
			prev = hourCells[hourCellKey{string(tsuid), iv, hour}]
		default:
			day := rollup.RowBase(hour)
			d, ok := w.cache.get(dayKey{string(tsuid), iv, day})
			if !ok || d.cell == nil {
				return nil, false
			}
			b, ok := cellBucket(d.cell, day, hour)
			if !ok {
				return nil, false
			}
			prev = []rollup.Bucket{b}
		}
		bs, ok := continueBuckets(iv, prev, prevLast, pts)
		if !ok {
			return nil, false
		}
		out[k] = bs
	}
	w.m.continued.Inc()
	return out, true
}

// continueBuckets returns the buckets prev (of the points up to prevLast)
// followed by pts, the last of prev continued; false if there is none or
// Resume declines.
func continueBuckets(iv int64, prev []rollup.Bucket, prevLast int64, pts []chunk.Point) ([]rollup.Bucket, bool) {
	if len(prev) == 0 {
		return nil, false
	}
	last := prev[len(prev)-1]
	if last.N() > 0 && last.LastT > prevLast {
		return nil, false
	}
	var b rollup.Builder
	if !b.Resume(iv, last, prevLast) {
		return nil, false
	}
	// Room for the buckets from last's to the last point's, not one a
	// point: a chunk of ~500 points made a ~75 KB slice for one 1h bucket,
	// 12.5 % of the server's allocations in a soak (docs/benchmarks.md).
	n := len(prev) + int(max(0, (pts[len(pts)-1].T-last.Start)/iv))
	bs := append(make([]rollup.Bucket, 0, n), prev[:len(prev)-1]...)
	bs, err := b.AddPoints(bs, pts)
	if err != nil {
		return nil, false
	}
	return b.Flush(bs), true
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
