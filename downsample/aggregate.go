package downsample

import (
	"context"
	"math"
	"math/bits"
	"sync"

	"hourglass/chunk"
)

// Scratch holds the buffers that Aggregate needs so that they can be reused
// from one call to the next. The zero value is ready to use. A Scratch is
// not safe for concurrent use; give each goroutine its own, or call the
// package-level Aggregate, which keeps a pool of them.
type Scratch struct {
	pending []heapItem // series that have not started, by first timestamp
	seg     []segment  // per series: its points around the current time
	next    []int32    // per series: the index of its first point after the current time
	active  []int32    // series that have started and not ended, in index order
	added   []int32    // series that start at the current time, in index order
	merged  []int32
	ints    []int64
	floats  []float64
}

// segment is a series' last point at or before the current time (x0, y0)
// and its first point after it (x1, y1), kept together so that the pass
// over the active series reads one small array rather than every series.
type segment struct {
	x0, x1 int64 // x1 is noNext after the last point
	y0, y1 chunk.Value
}

// noNext marks a series that has no point after the current time. (So a
// point stamped math.MaxInt64, 292 million years from now, is ignored.)
const noNext = math.MaxInt64

var scratches = sync.Pool{New: func() any { return new(Scratch) }}

// Aggregate is (*Scratch).Aggregate with a pooled Scratch.
func Aggregate(dst []chunk.Point, series [][]chunk.Point, agg *Aggregator, isRate bool) []chunk.Point {
	s := scratches.Get().(*Scratch)
	dst, _ = s.aggregate(nil, dst, series, agg, isRate)
	scratches.Put(s)
	return dst
}

// ctxEvery is how many output points aggregation makes between two looks
// at its context.
const ctxEvery = 1 << 14

// AggregateContext is Aggregate that looks at ctx every 16,384 output
// points and stops with ctx's error once it has one (dst is then
// incomplete).
func AggregateContext(ctx context.Context, dst []chunk.Point, series [][]chunk.Point, agg *Aggregator, isRate bool) ([]chunk.Point, error) {
	s := scratches.Get().(*Scratch)
	dst, err := s.aggregate(ctx, dst, series, agg, isRate)
	scratches.Put(s)
	return dst, err
}

// Aggregate appends to dst the aggregation of several series into one, as
// OpenTSDB 2.4's AggregationIterator does, and returns the extended slice.
// Each series must be sorted by timestamp (strictly increasing, as the scan
// delivers; a repeated timestamp counts once, its last point winning).
//
// The output has a point at every timestamp of any series (the union, in
// order). At time t, a series contributes
//
//   - nothing before its first point or after its last;
//   - its value, if it has a point at t;
//   - otherwise a value from the aggregator's interpolation between its
//     points around t: Lerp (in int64, truncating, when both are integers;
//     in float64 otherwise), 0, the largest or smallest value of the type,
//     or the previous value. When isRate is set the previous value is used
//     whatever the aggregator: OpenTSDB does not interpolate rates.
//
// count counts only series with a point at t, never interpolated ones (in
// this we differ from OpenTSDB; see its issue 977). NaN values are skipped by
// every aggregator. The result is an integer when isRate is false and every
// value that went into it (the point at t, or both points around t) is an
// integer; otherwise it is a float.
//
// With agg "none" each timestamp gets the first contributing value; callers
// emit each series on its own instead of aggregating with "none".
//
// Cost: the output has U timestamps and each aggregates the A series active
// at that time, so U·A values must be computed whatever the merge; the merge
// rides along that pass, advancing the active series and finding the next
// timestamp, and keeps the series that have not started in a heap. In all
// it is O(U·A + S·log S) for S series, never more than a heap merge's
// O(P·log S + U·A) for P points, since U·A ≥ P: with aligned series (as
// after downsampling) that is O(P). Memory beyond dst is held in s.
func (s *Scratch) Aggregate(dst []chunk.Point, series [][]chunk.Point, agg *Aggregator, isRate bool) []chunk.Point {
	dst, _ = s.aggregate(nil, dst, series, agg, isRate)
	return dst
}

// aggregate is Aggregate, stopping with ctx's error when ctx is not nil.
func (s *Scratch) aggregate(ctx context.Context, dst []chunk.Point, series [][]chunk.Point, agg *Aggregator, isRate bool) ([]chunk.Point, error) {
	if agg == nil {
		panic("downsample: Aggregate needs an aggregator")
	}
	n := len(series)
	s.next = resize(s.next, n)
	if cap(s.seg) < n {
		s.seg = make([]segment, n)
	}
	s.seg = s.seg[:n]
	s.pending = s.pending[:0]
	s.active = s.active[:0]
	for i, pts := range series {
		s.next[i] = 0
		if len(pts) > 0 {
			s.seg[i] = segment{x1: pts[0].T, y1: pts[0].V}
			s.pending = append(s.pending, heapItem{t: pts[0].T, i: int32(i)})
		}
	}
	for i := len(s.pending)/2 - 1; i >= 0; i-- {
		s.down(i)
	}

	interp := agg.interp
	if isRate {
		interp = PrevIfMissing
	}
	t := int64(noNext) // the next output timestamp among active series
	for k := 1; ; k++ {
		if ctx != nil && k%ctxEvery == 0 && ctx.Err() != nil {
			return dst, ctx.Err()
		}
		if len(s.pending) > 0 && s.pending[0].t <= t {
			t = s.pending[0].t
			// Start every series whose first point is at t. Ties pop in
			// index order, so added is sorted.
			s.added = s.added[:0]
			for len(s.pending) > 0 && s.pending[0].t == t {
				s.added = append(s.added, s.pending[0].i)
				last := len(s.pending) - 1
				s.pending[0] = s.pending[last]
				s.pending = s.pending[:last]
				s.down(0)
			}
			s.join()
		}
		if t == noNext {
			return dst, nil
		}
		isInt := s.advance(series, t, agg.kind == kCount, isRate)
		dst = s.emit(dst, t, agg, interp, isInt)
		t = s.following()
	}
}

// advance moves every active series that has a point at t onto it, drops
// the series that ended before t, and reports whether the aggregate at t
// is an integer.
func (s *Scratch) advance(series [][]chunk.Point, t int64, count, isRate bool) bool {
	isInt := !isRate
	w := 0
	for _, i := range s.active {
		g := &s.seg[i]
		switch {
		case g.x1 == t:
			pts := series[i]
			at := s.next[i]
			j := at + 1
			for ; int(j) < len(pts) && pts[j].T <= t; j++ {
				if pts[j].T == t {
					at = j // a duplicate: the last one wins
				}
			}
			s.next[i] = j
			g.x0, g.y0 = t, pts[at].V
			if int(j) < len(pts) {
				g.x1, g.y1 = pts[j].T, pts[j].V
			} else {
				g.x1 = noNext
			}
			isInt = isInt && g.y0.IsInt()
		case g.x1 == noNext:
			continue // past its last point: it has ended
		default:
			if !count {
				isInt = isInt && g.y0.IsInt() && g.y1.IsInt()
			}
		}
		s.active[w] = i
		w++
	}
	s.active = s.active[:w]
	return isInt
}

// following returns the earliest next timestamp among active series.
func (s *Scratch) following() int64 {
	t := int64(noNext)
	for _, i := range s.active {
		t = min(t, s.seg[i].x1)
	}
	return t
}

// join merges the series that start at the current time into active.
func (s *Scratch) join() {
	switch {
	case len(s.added) == 0:
		return
	case len(s.active) == 0 || s.active[len(s.active)-1] < s.added[0]:
		s.active = append(s.active, s.added...)
		return
	}
	m := s.merged[:0]
	a, b := s.active, s.added
	for len(a) > 0 && len(b) > 0 {
		if a[0] < b[0] {
			m, a = append(m, a[0]), a[1:]
		} else {
			m, b = append(m, b[0]), b[1:]
		}
	}
	m = append(append(m, a...), b...)
	s.merged, s.active = s.active[:0], m
}

// emit appends the aggregate at t of the active series.
func (s *Scratch) emit(dst []chunk.Point, t int64, agg *Aggregator, interp Interpolation, isInt bool) []chunk.Point {
	count := agg.kind == kCount
	if isInt {
		var acc intAcc
		acc.reset(agg, s.ints)
		for _, i := range s.active {
			g := &s.seg[i]
			if g.x0 == t {
				acc.add(g.y0.Int())
				continue
			}
			if count {
				continue
			}
			switch interp {
			case Lerp:
				acc.add(lerpInt(g.x0, g.y0.Int(), g.x1, g.y1.Int(), t))
			case ZeroIfMissing:
				acc.add(0)
			case MaxIfMissing:
				acc.add(math.MaxInt64)
			case MinIfMissing:
				acc.add(math.MinInt64)
			case PrevIfMissing:
				acc.add(g.y0.Int())
			}
		}
		s.ints = acc.buf[:0]
		return append(dst, chunk.Point{T: t, V: chunk.Int(acc.result())})
	}

	var acc floatAcc
	acc.reset(agg, s.floats)
	for _, i := range s.active {
		g := &s.seg[i]
		if g.x0 == t {
			acc.add(g.y0.Float())
			continue
		}
		if count {
			continue
		}
		switch interp {
		case Lerp:
			y0, y1 := g.y0.Float(), g.y1.Float()
			acc.add(y0 + float64(t-g.x0)*(y1-y0)/float64(g.x1-g.x0))
		case ZeroIfMissing:
			acc.add(0)
		case MaxIfMissing:
			acc.add(math.MaxFloat64)
		case MinIfMissing:
			acc.add(-math.MaxFloat64)
		case PrevIfMissing:
			acc.add(g.y0.Float())
		}
	}
	s.floats = acc.buf[:0]
	return append(dst, chunk.Point{T: t, V: chunk.Float(acc.result())})
}

// lerpInt is OpenTSDB's long interpolation y0 + (x−x0)·(y1−y0)/(x1−x0),
// truncated toward zero, for x0 < x < x1. The product is computed in 128
// bits, so unlike Java it does not overflow; where Java does not overflow
// the results are equal.
func lerpInt(x0, y0, x1, y1, x int64) int64 {
	dx := uint64(x) - uint64(x0)
	span := uint64(x1) - uint64(x0)
	neg := y1 < y0
	var dy uint64
	if neg {
		dy = uint64(y0) - uint64(y1)
	} else {
		dy = uint64(y1) - uint64(y0)
	}
	hi, lo := bits.Mul64(dx, dy)
	q, _ := bits.Div64(hi, lo, span) // hi < span because dx < span
	if neg {
		return int64(uint64(y0) - q)
	}
	return int64(uint64(y0) + q)
}

// heapItem is a series and the timestamp of its first point.
type heapItem struct {
	t int64
	i int32
}

func (a heapItem) less(b heapItem) bool {
	return a.t < b.t || (a.t == b.t && a.i < b.i)
}

// down restores the heap order of pending from position i downward:
// series are ordered by their first timestamp, then by index.
func (s *Scratch) down(i int) {
	h := s.pending
	n := len(h)
	if i >= n {
		return
	}
	x := h[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].less(h[l]) {
			m = r
		}
		if !h[m].less(x) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = x
}

func resize(b []int32, n int) []int32 {
	if cap(b) < n {
		return make([]int32, n)
	}
	return b[:n]
}
