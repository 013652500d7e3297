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

// rollupCell is a computed cell a delete changes: its series, interval,
// base and buckets.
type rollupCell struct {
	tsuid []byte
	iv    int64
	base  int64
	bs    []rollup.Bucket
	dirty bool
}

// deleteRange takes the points of the series tsuids in [start, end] (ms,
// inclusive) out of the rollups, after the Deleter took them out of the
// data table: a bucket wholly inside the range goes; a bucket across one
// of its edges is computed again from the raw rows of its hours (what is
// left of them: a bucket whose raw rows have expired keeps only what the
// raw rows still hold); points written to /api/rollup in the range go.
func (w *rollupWriter) deleteRange(ctx context.Context, tsuids [][]byte, start, end int64) error {
	if len(tsuids) == 0 {
		return nil
	}
	var muts []store.Mutation
	var cells []*rollupCell
	need := map[rawKey]bool{}
	for _, iv := range w.intervals {
		span := rollup.CellSpan(iv)
		from, to := rollup.CellBase(start, iv), rollup.CellBase(end, iv)+span
		err := rollup.ScanCells(ctx, w.st, w.layout, iv, tsuids, from, to, func(i int, day int64, q rollup.Qualifier, v []byte) (bool, error) {
			tsuid := tsuids[i]
			if q.Agg != 0 {
				if t := day + q.Offset; t >= start && t <= end {
					muts = append(muts, store.Mutation{Row: rollup.AppendRowKey(nil, w.layout, tsuid, iv, day),
						Qualifier: rollup.AppendExternalQualifier(nil, q.Agg, day, t), Delete: true})
				}
				return true, nil
			}
			base := day + q.Offset
			bs, err := rollup.DecodeCell(nil, v, base)
			if err != nil {
				// Left as it is: a query reports it.
				w.m.errors.Inc()
				w.log.Error("delete: a corrupt rollup cell is left as it is", "series", fmt.Sprintf("%x", tsuid), "err", err)
				return true, nil
			}
			c := &rollupCell{tsuid: tsuid, iv: iv, base: base}
			for _, b := range bs {
				last := b.Start + iv - 1
				switch {
				case last < start || b.Start > end: // outside: kept
					c.bs = append(c.bs, b)
				case b.Start >= start && last <= end: // inside: gone
					c.dirty = true
				default: // across an edge: computed again
					c.dirty = true
					for h := rowkey.HourOf(b.Start); h <= last; h += rowkey.HourMs {
						need[rawKey{string(tsuid), h}] = true
					}
					c.bs = append(c.bs, rollup.Bucket{Start: b.Start, Count: -1}) // a placeholder
				}
			}
			if c.dirty {
				cells = append(cells, c)
			}
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	raw, err := w.readRaw(ctx, need)
	if err != nil {
		return err
	}
	for _, c := range cells {
		if c.iv >= rowkey.HourMs {
			w.cache.forget(dayKey{string(c.tsuid), c.iv, c.base})
		}
		bs := c.bs[:0]
		for _, b := range c.bs {
			if b.Count >= 0 {
				bs = append(bs, b)
				continue
			}
			var pts []chunk.Point
			for h := rowkey.HourOf(b.Start); h < b.Start+c.iv; h += rowkey.HourMs {
				pts = append(pts, raw[rawKey{string(c.tsuid), h}]...)
			}
			again, err := rollup.Compute(nil, clip(pts, b.Start, b.Start+c.iv), c.iv)
			if err != nil {
				panic("series: rollup of sorted points: " + err.Error())
			}
			bs = append(bs, again...)
		}
		m, err := rollup.CellMutation(w.layout, c.tsuid, c.iv, c.base, bs)
		if err != nil {
			return err
		}
		muts = append(muts, m)
	}
	if len(muts) == 0 {
		return nil
	}
	sort.SliceStable(muts, func(i, j int) bool { return string(muts[i].Row) < string(muts[j].Row) })
	if err := w.st.Write(ctx, store.TableRollup, muts); err != nil {
		w.m.errors.Inc()
		return fmt.Errorf("series: deleting from the rollups: %w", err)
	}
	w.m.cells.Add(float64(len(muts)))
	return nil
}

// clip returns the points of pts (sorted) in [from, to).
func clip(pts []chunk.Point, from, to int64) []chunk.Point {
	i := sort.Search(len(pts), func(i int) bool { return pts[i].T >= from })
	j := sort.Search(len(pts), func(i int) bool { return pts[i].T >= to })
	return pts[i:j]
}
