package downsample

import "math"

// Buckets bounds the number of buckets a series with a point in
// [start, end] gets from s over that range, the number of points
// Downsample emits for it with a fill policy other than none (with none,
// no more than its points either). lo <= hi; both are exact without
// calendar alignment, and 1 for All. Calendar buckets follow months and
// DST and restart at each minute, hour, day... when the interval does not
// divide it, so for them lo and hi are loose: half and three times the
// nominal count, give or take two. The bounds saturate at math.MaxInt64.
func (s Spec) Buckets(start, end int64) (lo, hi int64) {
	switch {
	case end < start:
		return 0, 0
	case s.All:
		return 1, 1
	case s.Interval <= 0:
		return 0, 0
	}
	span := uint64(end) - uint64(start) // no overflow: end >= start
	if !s.Calendar {
		// Buckets are stamped T − T mod interval; those stamped in
		// [start, end] are emitted.
		first := start - floorMod(start, s.Interval)
		if first < start {
			if first > math.MaxInt64-s.Interval {
				return 0, 0
			}
			first += s.Interval
		}
		if first > end {
			return 0, 0
		}
		q := (uint64(end) - uint64(first)) / uint64(s.Interval)
		if q >= math.MaxInt64 {
			return math.MaxInt64, math.MaxInt64
		}
		return int64(q) + 1, int64(q) + 1
	}
	n := span / uint64(s.Interval)
	lo = int64(n/2) - 1
	if n > math.MaxInt64/3-3 {
		return max(lo, 0), math.MaxInt64
	}
	return max(lo, 0), int64(3*n + 3)
}
