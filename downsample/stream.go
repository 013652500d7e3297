package downsample

import (
	"math"
	"sort"
	"time"

	"hourglass/chunk"
)

// Downsampler computes Downsample over a series whose points arrive one at
// a time, in increasing timestamp order, holding one bucket's state instead
// of the whole series: a day of 10-second points into 1 h buckets needs 24
// points of memory, not 8,640. Its output is Downsample's, bit for bit, for
// the same points, spec, range and location.
//
// The zero Downsampler is not ready for use; call Reset. A Downsampler may
// be reused through Reset, keeping its buffers. It is not safe for
// concurrent use.
type Downsampler struct {
	spec       Spec
	start, end int64
	bk         bucketer
	dst        []chunk.Point
	acc        floatAcc
	bufp       *[]float64 // median and percentiles: pooled value buffer
	fill       chunk.Value

	started bool // a point in [start, end] has arrived
	dead    bool // no bucket can be emitted
	seen    bool // All: a point went into the bucket
	bs, be  int64
	n       int // points in the current bucket
	prevT   int64

	limit int64 // points it may still emit; < 0: no limit
	over  bool  // it would have emitted more than its limit

	keepFrom int64 // KeepBefore's from
	keepN    int   // KeepBefore's n; 0: every bucket is kept
	base     int   // len(dst) at Reset: the buckets emitted start there
}

// Reset prepares d to downsample one series with spec over [start, end]
// (see Downsample), appending to dst. It panics on a spec Downsample
// rejects.
func (d *Downsampler) Reset(dst []chunk.Point, spec Spec, start, end int64, loc *time.Location) {
	switch {
	case spec.Agg == nil:
		panic("downsample: Spec has no aggregator; use ParseSpec")
	case spec.Agg.kind == kNone:
		panic("downsample: cannot use the NONE aggregator for downsampling")
	case !spec.All && spec.Interval <= 0:
		panic("downsample: Spec has no interval; use ParseSpec")
	}
	d.release()
	*d = Downsampler{spec: spec, start: start, end: end, dst: dst, prevT: math.MinInt64, limit: -1, base: len(dst)}
	if spec.Agg.kind == kMedian || spec.Agg.kind == kPercentile {
		d.bufp = floatBufs.Get().(*[]float64)
		d.acc.buf = *d.bufp
	}
	d.acc.reset(spec.Agg, d.acc.buf)
	switch spec.Fill {
	case FillNaN, FillNull:
		d.fill = chunk.Float(math.NaN())
	case FillZero:
		d.fill = chunk.Float(0)
	}
	if end < start {
		d.dead = true
		return
	}
	if !spec.All {
		d.bk = newBucketer(spec, loc)
	}
}

// Limit makes d emit at most n points from now on (n >= 0): past them it
// stops, drops the rest of the series and Over reports true. It bounds
// the memory of one series when the caller could not bound its buckets
// beforehand. Reset removes the limit.
func (d *Downsampler) Limit(n int64) { d.limit = max(n, 0) }

// KeepBefore lets d drop, of the buckets that start before from, all but
// the last n that have points (n >= 1), for a caller that trims the
// output to [from, end] and needs no more than those before from (the
// base of an interpolation, of a rate). d drops only at a run of points
// (AddBlock, AddPoints) that holds n buckets before from after some of its
// points: those points it skips unread, the buckets before them it drops,
// emitted or not (their points no longer count against the Limit). It may
// keep more. With a fill policy, calendar or 0all buckets it keeps every
// bucket. Reset removes it.
func (d *Downsampler) KeepBefore(from int64, n int) {
	if n < 1 || d.spec.All || d.spec.Fill != FillNone || d.bk.cal {
		return
	}
	d.keepFrom, d.keepN = from, n
}

// skip is KeepBefore's drop at a run of n points whose i-th timestamp is
// at(i), increasing: it returns the index of the first point to add, 0
// when nothing can be dropped.
func (d *Downsampler) skip(n int, at func(int) int64) int {
	if !d.started || d.dead || at(0) <= d.prevT {
		return 0
	}
	// The points before keepFrom (and in the range).
	lim := min(d.keepFrom, satAdd(d.end, 1))
	j := sort.Search(n, func(i int) bool { return at(i) >= lim })
	i0 := 0
	for range d.keepN {
		if j == 0 {
			return 0 // fewer than keepN buckets before from in the run
		}
		t := at(j - 1)
		bs := t - floorMod(t, d.bk.width)
		i0 = sort.Search(j, func(i int) bool { return at(i) >= bs })
		j = i0
	}
	if i0 == 0 {
		return 0
	}
	// Points 0..i0-1, the current bucket and the emitted ones are all in
	// buckets before the bucket of point i0, and keepN buckets before
	// from follow them.
	if d.limit >= 0 {
		d.limit += int64(len(d.dst) - d.base)
	}
	d.dst = d.dst[:d.base]
	d.acc.reset(d.spec.Agg, d.acc.buf)
	d.n = 0
	d.bs, d.be = d.bk.bounds(at(i0))
	d.prevT = at(i0 - 1)
	return i0
}

// Over reports whether d stopped at its Limit, so that its output is
// incomplete; it is final once Finish has returned, until Reset.
func (d *Downsampler) Over() bool { return d.over }

// emit appends p unless that goes past the limit, in which case it stops
// d and returns false.
func (d *Downsampler) emit(dst []chunk.Point, p chunk.Point) ([]chunk.Point, bool) {
	if d.limit == 0 {
		d.over, d.dead = true, true
		return dst, false
	}
	d.limit-- // -1 (no limit) stays negative
	return append(dst, p), true
}

// release returns the pooled value buffer.
func (d *Downsampler) release() {
	if d.bufp != nil {
		if cap(d.acc.buf) <= floatBufKeep {
			*d.bufp = d.acc.buf[:0]
			floatBufs.Put(d.bufp)
		}
		d.bufp = nil
		d.acc.buf = nil
	}
}

// Add adds the point (t, v). Timestamps must increase from one call to the
// next; a point at or before the previous one panics (a broken invariant
// of the caller's merge).
func (d *Downsampler) Add(t int64, v chunk.Value) {
	if t > d.prevT && t >= d.bs && t < d.be && t <= d.end {
		// Into the current bucket (bs = be = 0 until the first bucket is
		// known, and when no bucket can be emitted).
		d.prevT = t
		d.acc.add(v.Float())
		d.n++
		return
	}
	d.add(t, v)
}

// AddBlock adds the points of b, as Add would one by one: the points of a
// bucket in one loop.
func (d *Downsampler) AddBlock(b *chunk.Block) {
	ts := b.T
	i := 0
	if d.keepN > 0 && len(ts) > 0 && ts[0] < d.keepFrom {
		i = d.skip(len(ts), func(k int) int64 { return ts[k] })
	}
	for i < len(ts) {
		t := ts[i]
		if (t <= d.prevT || t < d.bs || t >= d.be || t > d.end) && !d.turn(t) {
			d.add(t, b.Value(i))
			i++
			continue
		}
		// Points i..j-1 go into the current bucket: a block's timestamps
		// increase, so when its last does, all of them do.
		j := len(ts)
		if last := ts[j-1]; last >= d.be || last > d.end {
			j = i + 1
			for j < len(ts) && ts[j] < d.be && ts[j] <= d.end {
				j++
			}
		}
		d.acc.addBlock(b, i, j)
		d.n += j - i
		d.prevT = ts[j-1]
		i = j
	}
}

// AddPoints adds pts, as Add would one by one: the points of a bucket in
// one loop. Their timestamps must increase.
func (d *Downsampler) AddPoints(pts []chunk.Point) {
	i := 0
	if d.keepN > 0 && len(pts) > 0 && pts[0].T < d.keepFrom {
		i = d.skip(len(pts), func(k int) int64 { return pts[k].T })
	}
	for i < len(pts) {
		t := pts[i].T
		if (t <= d.prevT || t < d.bs || t >= d.be || t > d.end) && !d.turn(t) {
			d.add(t, pts[i].V)
			i++
			continue
		}
		j := len(pts)
		if last := pts[j-1].T; last >= d.be || last > d.end {
			j = i + 1
			for j < len(pts) && pts[j].T < d.be && pts[j].T <= d.end {
				j++
			}
		}
		d.acc.addPoints(pts[i:j])
		d.n += j - i
		d.prevT = pts[j-1].T
		i = j
	}
}

// turn emits the current bucket and makes the next one current when t,
// the next point's timestamp, falls in the fixed-width bucket right after
// it, and reports whether it did: what add does at a bucket's end when
// every bucket has points, without its general path (the 1 m buckets of
// 10 s points turn every 6 points). t then goes into the new bucket.
func (d *Downsampler) turn(t int64) bool {
	if d.n == 0 || d.bk.cal || d.limit == 0 || t <= d.prevT || t > d.end || t < d.be ||
		d.be > math.MaxInt64-d.bk.width || t >= d.be+d.bk.width {
		return false
	}
	d.limit-- // -1 (no limit) stays negative
	d.dst = append(d.dst, chunk.Point{T: d.bs, V: chunk.Float(d.acc.result())})
	d.acc.reset(d.spec.Agg, d.acc.buf)
	d.n = 0
	d.bs, d.be = d.be, d.be+d.bk.width
	return true
}

func (d *Downsampler) add(t int64, v chunk.Value) {
	if t <= d.prevT {
		panic("downsample: Downsampler.Add out of order")
	}
	d.prevT = t
	if d.dead || t < d.start || t > d.end {
		return
	}
	if d.spec.All {
		d.seen = true
		d.acc.add(v.Float())
		// The range is the one bucket: Add and the runs take the next
		// points in their fast paths.
		d.bs, d.be = d.start, satAdd(d.end, 1)
		return
	}
	if !d.started {
		d.started = true
		bs, be := d.bk.bounds(d.start)
		if bs < d.start { // the partial bucket holding start is not emitted
			if be == math.MaxInt64 {
				d.dead = true // and bs = be = 0
				return
			}
			bs, be = nextBucket(&d.bk, be)
		}
		d.bs, d.be = bs, be
	}
	if t < d.bs {
		return // in the partial bucket before the first whole one
	}
	for d.be != math.MaxInt64 && t >= d.be {
		// The current bucket is complete: t <= end, so bs <= end too.
		ok := true
		switch {
		case d.n > 0:
			d.dst, ok = d.emit(d.dst, chunk.Point{T: d.bs, V: chunk.Float(d.acc.result())})
		case d.spec.Fill != FillNone:
			d.dst, ok = d.emit(d.dst, chunk.Point{T: d.bs, V: d.fill})
		default:
			// Jump straight to the bucket of t.
			nbs, nbe := d.bk.bounds(t)
			d.bs, d.be = max(nbs, d.be), nbe
			continue
		}
		if !ok {
			return
		}
		d.acc.reset(d.spec.Agg, d.acc.buf)
		d.n = 0
		d.bs, d.be = nextBucket(&d.bk, d.be)
	}
	d.acc.add(v.Float())
	d.n++
}

// Finish emits the buckets still open and returns dst extended with every
// bucket of the series. d must be Reset before it is used again.
func (d *Downsampler) Finish() []chunk.Point {
	dst := d.finish()
	d.release()
	d.dst = nil
	d.dead = true
	return dst
}

func (d *Downsampler) finish() []chunk.Point {
	dst := d.dst
	if d.dead {
		return dst
	}
	if d.spec.All {
		if d.seen {
			dst, _ = d.emit(dst, chunk.Point{T: d.start, V: chunk.Float(d.acc.result())})
		}
		return dst
	}
	if !d.started {
		return dst
	}
	for d.bs <= d.end {
		ok := true
		switch {
		case d.n > 0:
			dst, ok = d.emit(dst, chunk.Point{T: d.bs, V: chunk.Float(d.acc.result())})
		case d.spec.Fill != FillNone:
			dst, ok = d.emit(dst, chunk.Point{T: d.bs, V: d.fill})
		default:
			return dst
		}
		if !ok {
			return dst
		}
		d.acc.reset(d.spec.Agg, d.acc.buf)
		d.n = 0
		if d.be == math.MaxInt64 {
			break
		}
		d.bs, d.be = nextBucket(&d.bk, d.be)
	}
	return dst
}
