package rollup

import "math"

// Resume readies b to continue bucket a, the bucket Compute gave over a
// run of points the last of which (NaNs and staleness markers included)
// is at prevT ms: the points added next, all after prevT, extend a, and
// the buckets flushed are bit for bit those Compute gives over the whole
// run (unlike Merge, whose float sums may round differently). The float
// sums go on from a's in point order; it reports false, and b is not to
// be used, when a does not hold what that needs: an int Sum whose float
// additions may have rounded (N × max|value| above 2^53), or an int sum
// that overflowed (its 128-bit value is lost).
func (b *Builder) Resume(intervalMs int64, a Bucket, prevT int64) bool {
	b.Reset(intervalMs)
	if prevT < a.Start || prevT-a.Start >= intervalMs {
		return false
	}
	b.cur, b.open, b.prevT = a, true, prevT
	if a.N() == 0 {
		return true
	}
	switch {
	case a.SumOverflow:
		return false
	case !a.Sum.IsInt():
		b.fsum = a.Sum.Float()
		return true
	}
	if !a.sumExact() {
		return false
	}
	// Every partial sum was an integer of at most 2^53: the float
	// additions were exact, and the float sum is the int sum.
	s := a.Sum.Int()
	b.allInt, b.fsum = true, float64(s)
	b.lo, b.hi = uint64(s), uint64(s>>63)
	return true
}

func absInt64(x int64) (int64, bool) {
	if x == math.MinInt64 {
		return 0, false
	}
	if x < 0 {
		return -x, true
	}
	return x, true
}
