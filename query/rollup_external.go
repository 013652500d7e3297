package query

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"hourglass/chunk"
	"hourglass/rollup"
	"hourglass/series"
)

// Rollups written from outside (OpenTSDB's /api/rollup, the telnet rollup
// command) are one value per series, interval bucket and aggregator. A
// series with no computed bucket in the range is read from them, as
// OpenTSDB reads its rollup tables: a downsample bucket is the sum, count,
// min, max, first or last of the values of its interval buckets; avg is
// Σ sum ÷ Σ count over the interval buckets that have both (OpenTSDB drops
// a sum without its count). There are no raw points to compare them with:
// they are what the writer wrote.

// externalAggs are the stored aggregators a downsampling function reads.
func externalAggs(name string) []rollup.Aggregator {
	switch name {
	case "sum", "zimsum", "pfsum":
		return []rollup.Aggregator{rollup.AggSum}
	case "count":
		return []rollup.Aggregator{rollup.AggCount}
	case "min", "mimmin":
		return []rollup.Aggregator{rollup.AggMin}
	case "max", "mimmax":
		return []rollup.Aggregator{rollup.AggMax}
	case "first":
		return []rollup.Aggregator{rollup.AggFirst}
	case "last":
		return []rollup.Aggregator{rollup.AggLast}
	case "avg":
		return []rollup.Aggregator{rollup.AggSum, rollup.AggCount}
	}
	return nil
}

// ExternalReader is a RollupReader that also reads rollups written from
// outside.
type ExternalReader interface {
	ReadExternal(ctx context.Context, entries []*series.Entry, iv int64, agg rollup.Aggregator, start, end int64, fn func(i int, t int64, v chunk.Value) error) error
}

// readExternal fills the series of st that have no computed bucket in
// [a, u) from the external points of interval iv, as downsampled points of
// width d, and reports whether there were any.
func (e *Engine) readExternal(ctx context.Context, entries []*series.Entry, st []rollupSeries, iv, a, d int64, name string) (bool, error) {
	xr, ok := e.ru.reader.(ExternalReader)
	aggs := externalAggs(name)
	if !ok || len(aggs) == 0 {
		return false, nil
	}
	var idx []int
	hi := a
	for i := range st {
		if st[i].count == 0 && !st[i].inexact && st[i].u > a {
			idx = append(idx, i)
			hi = max(hi, st[i].u)
		}
	}
	if len(idx) == 0 {
		return false, nil
	}
	sub := pick(entries, idx)
	// vals[k][j]: the points of aggregator aggs[k] of series idx[j].
	vals := make([][][]chunk.Point, len(aggs))
	lim := e.rawLimit()
	lim.why = "rollup points read"
	var read atomic.Int64
	var mu sync.Mutex
	for k, agg := range aggs {
		vals[k] = make([][]chunk.Point, len(idx))
		err := xr.ReadExternal(ctx, sub, iv, agg, a, hi, func(j int, t int64, v chunk.Value) error {
			if t >= st[idx[j]].u {
				return nil
			}
			if n := read.Add(1); lim.over(n) {
				return e.exceeded(lim.err(n))
			}
			mu.Lock()
			vals[k][j] = append(vals[k][j], chunk.Point{T: t, V: v})
			mu.Unlock()
			return nil
		})
		if err != nil {
			return false, err
		}
	}
	any := false
	for j, i := range idx {
		cols := make([][]chunk.Point, len(aggs))
		for k := range aggs {
			cols[k] = vals[k][j]
		}
		pts := externalBuckets(cols, name, d)
		if len(pts) > 0 {
			any = true
			st[i].pts = pts
			st[i].count = len(cols[0])
			st[i].ext = true
		}
	}
	return any, nil
}

// externalBuckets turns the external points of one series (cols[0], and
// for avg the counts in cols[1]) into downsampled points of width d.
func externalBuckets(cols [][]chunk.Point, name string, d int64) []chunk.Point {
	pts := cols[0]
	var counts map[int64]float64
	if name == "avg" {
		counts = make(map[int64]float64, len(cols[1]))
		for _, p := range cols[1] {
			counts[p.T] = p.V.Float()
		}
	}
	slices.SortFunc(pts, func(x, y chunk.Point) int { return cmp.Compare(x.T, y.T) })
	var (
		out      []chunk.Point
		cur      int64
		acc, cnt float64
		have     bool
	)
	emit := func() {
		v := acc
		if counts != nil {
			v = acc / cnt
		}
		out = append(out, chunk.Point{T: cur, V: chunk.Float(v)})
	}
	for _, p := range pts {
		var c float64
		if counts != nil {
			var ok bool
			if c, ok = counts[p.T]; !ok {
				continue // OpenTSDB drops a sum without its count
			}
		}
		x := p.V.Float()
		if bs := floorTo(p.T, d); !have || bs != cur {
			if have {
				emit()
			}
			cur, have, acc, cnt = bs, true, x, c
			continue
		}
		cnt += c
		switch name {
		case "min", "mimmin":
			if x < acc {
				acc = x
			}
		case "max", "mimmax":
			if x > acc {
				acc = x
			}
		case "last":
			acc = x
		case "first":
		default: // sum, count, avg
			acc += x
		}
	}
	if have {
		emit()
	}
	return out
}
