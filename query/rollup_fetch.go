package query

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync/atomic"
	"time"

	"hourglass/chunk"
	"hourglass/downsample"
	"hourglass/rollup"
	"hourglass/rowkey"
	"hourglass/series"
)

// The split query. Fetch with a downsample of fixed width D that a rollup
// interval iv divides reads, for each series, the same buckets as the raw
// path over [start, end] (the downsampler's: from the first whole bucket A
// at or after start to the last that starts at or before end), from three
// parts:
//
//   - [A, U): rollups. U is the end of the last whole bucket of the range,
//     or, if earlier, the bucket holding the first point the head still
//     holds for the series (a point the head holds may not be in the
//     store's rows, nor in their rollups, yet; the head is read before the
//     rollups, and a chunk leaves the head only once its row and rollups
//     are written). A, U are multiples of D, so each bucket is whole.
//   - [U, end]: raw points (store and head), downsampled as the raw path
//     does: the open hours, and the partial bucket at the end.
//   - [start, A): raw points; they make no bucket (the downsampler skips
//     the partial first bucket) but they do make the series part of the
//     answer and start its fill.
//
// A series whose buckets cannot give the raw answer bit for bit (float
// sums over several rollup buckets, int sums past 2^53) is read raw whole.

// rollupSeries is one series' state while its buckets are read.
type rollupSeries struct {
	u     int64 // the end of its rollup part
	pts   []chunk.Point
	acc   bucketAcc
	cur   int64   // the downsample bucket acc holds; valid when acc.exists
	count int     // points the buckets stand for (a bucket of markers only counts 1)
	nb    int64   // buckets read
	days  []int64 // the UTC days (ms) its buckets are in, in order
	ext   bool    // its points are rollups written from outside
	// inexact: the series is read raw whole (its buckets would not give the
	// raw answer, or a day of it has raw data and no rollups).
	inexact bool
}

func (s *rollupSeries) flush(name string) {
	if !s.acc.exists {
		return
	}
	v, ok := s.acc.result(name)
	if !ok {
		s.inexact = true
	}
	s.pts = append(s.pts, chunk.Point{T: s.cur, V: v})
	s.acc.reset()
}

func floorTo(t, d int64) int64 { return rollup.BucketStart(t, d) }

func ceilTo(t, d int64) int64 {
	f := floorTo(t, d)
	if f < t {
		return f + d
	}
	return f
}

// fetchRollups answers a downsampled Fetch from rollups where it can; ok
// is false when req must be read raw (the caller reads it).
func (e *Engine) fetchRollups(ctx context.Context, req Request, entries []*series.Entry, start, end int64) (_ []Series, ok bool, _ error) {
	ivs := e.rollupIntervals(req)
	if len(ivs) == 0 || len(entries) == 0 || end < start {
		return nil, false, nil
	}
	spec := *req.Downsample
	d, _ := fixedInterval(&spec, req.Location)
	a, whole := ceilTo(start, d), floorTo(end+1, d)
	if whole <= a {
		return nil, false, nil // not one whole bucket: nothing to gain
	}
	st := make([]rollupSeries, len(entries))
	for i, en := range entries {
		u := whole
		if h, ok := e.firstHeadHour(en.Labels, start, end); ok {
			u = min(u, floorTo(h, d))
		}
		st[i].u = max(u, a)
	}
	for k, iv := range ivs {
		any, err := e.readRollupBuckets(ctx, entries, st, iv, a, spec.Agg.Name(), d)
		if err != nil {
			return nil, true, err
		}
		ext, err := e.readExternal(ctx, entries, st, iv, a, d, spec.Agg.Name())
		if err != nil {
			return nil, true, err
		}
		any = any || ext
		if any || req.Rollup == RollupNoFallback {
			markMissingDays(entries, st, a)
			e.countRollupRead(iv)
			out, err := e.joinRollups(ctx, req, entries, st, iv, start, end, a)
			return out, true, err
		}
		if req.Rollup == RollupFallbackRaw || k == len(ivs)-1 {
			break
		}
		for i := range st {
			st[i] = rollupSeries{u: st[i].u} // the next interval starts afresh
		}
	}
	// No rollup data: OpenTSDB's fallback to the raw table.
	return nil, false, nil
}

const dayMs = 24 * rowkey.HourMs

// headHours is what series.Head offers beyond Snapshot: the first hour in
// which it holds a chunk of a series.
type headHours interface {
	FirstHour(l series.Labels, start, end int64) (int64, bool)
}

// firstHeadHour returns the earliest hour of [start, end] from which the
// store may not hold every point of l yet (the head holds some), or false.
func (e *Engine) firstHeadHour(l series.Labels, start, end int64) (int64, bool) {
	if hh, ok := e.head.(headHours); ok {
		return hh.FirstHour(l, start, end)
	}
	if h := e.head.Snapshot(l, start, end, nil); len(h) > 0 {
		return rowkey.HourOf(h[0].T), true
	}
	return 0, false
}

// markMissingDays sends to the raw path each series with a UTC day wholly
// in its rollup part that the index says has data but that has no rollup
// bucket: data written before its rollups were (an older data set, an
// interval added since). Rollups from outside are taken as they are.
func markMissingDays(entries []*series.Entry, st []rollupSeries, a int64) {
	for i := range st {
		s := &st[i]
		if s.inexact || s.ext {
			continue
		}
		j := 0
		for day := ceilTo(a, dayMs); day+dayMs <= s.u; day += dayMs {
			for j < len(s.days) && s.days[j] < day {
				j++
			}
			if j < len(s.days) && s.days[j] == day {
				continue
			}
			if n := uint32(day / dayMs); entries[i].HasDays(n, n) {
				s.inexact = true
				break
			}
		}
	}
}

// readRollupBuckets reads the buckets of interval iv in [a, u) of each
// series into st as downsampled points of width d, and reports whether
// there was any.
func (e *Engine) readRollupBuckets(ctx context.Context, entries []*series.Entry, st []rollupSeries, iv, a int64, agg string, d int64) (bool, error) {
	hi := a
	for i := range st {
		hi = max(hi, st[i].u)
		st[i].acc.reset()
	}
	if hi <= a {
		return false, nil
	}
	lim := e.rawLimit()
	lim.why = "rollup buckets read"
	// The buckets read are counted against the limit in batches: a shared
	// counter per bucket is contended across the salt buckets' goroutines.
	const batch = 64
	var read atomic.Int64
	// A sum, avg or count of one bucket per downsampled point needs only
	// the sums and counts (bucketAcc.addSum).
	fields, add := rollup.FieldsAll, (*bucketAcc).add
	one := oneBucketAgg(-1) // not one bucket per point
	if sumAggs[agg] && d == iv {
		fields, add, one = rollup.FieldsSum, (*bucketAcc).addSum, oneBucketAggOf(agg)
	}
	err := e.ru.reader.ReadBuckets(ctx, entries, iv, a, hi, fields, func(i int, b *rollup.Bucket) error {
		s := &st[i]
		if b.Start < a || b.Start >= s.u {
			return nil
		}
		if s.nb++; s.nb%batch == 0 {
			if n := read.Add(batch); lim.over(n) {
				return e.exceeded(lim.err(n))
			}
		}
		if one >= 0 {
			// Each bucket is one downsampled point: no bucketAcc.
			if s.pts == nil {
				s.pts = make([]chunk.Point, 0, min((s.u-b.Start)/d+1, 1<<16))
			}
			v, ok := one.result(b)
			if !ok {
				s.inexact = true
			}
			s.pts = append(s.pts, chunk.Point{T: b.Start, V: v})
			s.count += int(max(b.Count, 1))
			if n := len(s.days); n == 0 || b.Start >= s.days[n-1]+dayMs {
				s.days = append(s.days, floorTo(b.Start, dayMs))
			}
			return nil
		}
		if bs := floorTo(b.Start, d); !s.acc.exists || bs != s.cur {
			if s.pts == nil {
				s.pts = make([]chunk.Point, 0, min((s.u-bs)/d+1, 1<<16))
			}
			s.flush(agg)
			s.cur = bs
		}
		add(&s.acc, b)
		s.count += int(max(b.Count, 1))
		if day := floorTo(b.Start, dayMs); len(s.days) == 0 || s.days[len(s.days)-1] != day {
			s.days = append(s.days, day)
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	var n int64
	any := false
	for i := range st {
		st[i].flush(agg)
		n += st[i].nb
		any = any || st[i].nb > 0
		if err := ctx.Err(); err != nil {
			return false, err
		}
	}
	if lim.over(n) {
		return false, e.exceeded(lim.err(n))
	}
	return any, nil
}

// joinRollups completes the series of st with their raw parts and returns
// them as Fetch does: downsampled, sorted by labels.
func (e *Engine) joinRollups(ctx context.Context, req Request, entries []*series.Entry, st []rollupSeries, iv, start, end, a int64) ([]Series, error) {
	spec := *req.Downsample
	d, _ := fixedInterval(&spec, req.Location)
	loc := req.Location
	if loc == nil {
		loc = time.UTC
	}
	out := make([]Series, len(entries))
	var rawIdx, tailIdx []int
	tailFrom := end + 1
	for i, en := range entries {
		out[i] = Series{Labels: en.Labels, TSUID: en.TSUID, downsampled: true}
		switch {
		case st[i].inexact:
			rawIdx = append(rawIdx, i)
		case st[i].u <= end:
			tailIdx = append(tailIdx, i)
			tailFrom = min(tailFrom, st[i].u)
		}
	}
	// The series read raw whole.
	if len(rawIdx) > 0 {
		raw, err := e.readDownsampled(ctx, pick(entries, rawIdx), start, end, spec, loc, 0, 0)
		if err != nil {
			return nil, err
		}
		byTSUID := map[string]Series{}
		for _, s := range raw {
			byTSUID[string(s.TSUID)] = s
		}
		for _, i := range rawIdx {
			if s, ok := byTSUID[string(entries[i].TSUID)]; ok {
				out[i] = s
			}
		}
	}
	tails, err := e.rawPart(ctx, entries, tailIdx, tailFrom, end)
	if err != nil {
		return nil, err
	}
	var heads map[int][]chunk.Point
	if a > start {
		all := make([]int, 0, len(entries))
		for i := range entries {
			if !st[i].inexact {
				all = append(all, i)
			}
		}
		if heads, err = e.rawPart(ctx, entries, all, start, a-1); err != nil {
			return nil, err
		}
	}
	b := newBudget(e.limits.MaxOutputPoints)
	noFill := spec
	noFill.Fill = downsample.FillNone
	var ds downsample.Downsampler
	for i := range entries {
		s := &st[i]
		if s.inexact {
			continue
		}
		pts := s.pts
		tail := tails[i]
		var tailPts []chunk.Point
		if len(tail) > 0 {
			ds.Reset(nil, noFill, s.u, end, loc)
			for _, p := range tail {
				if p.T >= s.u {
					ds.Add(p.T, p.V)
				}
			}
			tailPts = ds.Finish()
		}
		n := s.count + len(heads[i]) + countFrom(tail, s.u)
		out[i].RawPoints, out[i].FromRollup = n, iv
		if n == 0 {
			continue
		}
		pts = append(pts, tailPts...)
		if spec.Fill != downsample.FillNone {
			pts = fillBuckets(pts, spec.Fill, d, a, end)
		}
		if got := b.take(int64(len(pts))); got < int64(len(pts)) {
			return nil, e.outputError(0, fmt.Sprintf("%d series, buckets of %s", len(entries), spec))
		}
		out[i].Points = pts
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels < out[j].Labels })
	return out, nil
}

// countFrom is the number of pts at or after t.
func countFrom(pts []chunk.Point, t int64) int {
	return len(pts) - sort.Search(len(pts), func(i int) bool { return pts[i].T >= t })
}

// rawPart reads the raw points of the series idx of entries in [from, to],
// by index into entries.
func (e *Engine) rawPart(ctx context.Context, entries []*series.Entry, idx []int, from, to int64) (map[int][]chunk.Point, error) {
	out := map[int][]chunk.Point{}
	if len(idx) == 0 || to < from {
		return out, nil
	}
	ss, err := e.read(ctx, pick(entries, idx), from, to, e.rawLimit())
	if err != nil {
		return nil, err
	}
	byTSUID := make(map[string]int, len(idx))
	for _, i := range idx {
		byTSUID[string(entries[i].TSUID)] = i
	}
	for _, s := range ss {
		if i, ok := byTSUID[string(s.TSUID)]; ok && len(s.Points) > 0 {
			out[i] = s.Points
		}
	}
	return out, nil
}

func pick(entries []*series.Entry, idx []int) []*series.Entry {
	out := make([]*series.Entry, len(idx))
	for j, i := range idx {
		out[j] = entries[i]
	}
	return out
}

// fillBuckets returns pts, the buckets with data of width d
// from a, with every bucket from a to the last starting at or before end
// that has none filled with the policy's value, as the downsampler
// fills them once a series has a point in range.
func fillBuckets(pts []chunk.Point, policy downsample.FillPolicy, d, a, end int64) []chunk.Point {
	var fill chunk.Value
	switch policy {
	case downsample.FillNaN, downsample.FillNull:
		fill = chunk.Float(math.NaN())
	case downsample.FillZero:
		fill = chunk.Float(0)
	}
	out := make([]chunk.Point, 0, (end-a)/d+1)
	j := 0
	for t := a; t <= end; t += d {
		if j < len(pts) && pts[j].T == t {
			out = append(out, pts[j])
			j++
			continue
		}
		out = append(out, chunk.Point{T: t, V: fill})
	}
	return out
}
